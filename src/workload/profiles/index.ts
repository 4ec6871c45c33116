export { builtinProfileNames, loadProfileFile, parseProfileText, resolveProfileRef } from './load.ts';
export {
  operationNames,
  type Profile,
  type ProfileStep,
  parseBytes,
  profileJsonSchema,
  resolveProfile,
  type UserProfile,
  userProfileSchema,
} from './schema.ts';
