export { AGENT_CLIS, AGENT_PACKAGES, type AgentCli, type AgentPackage, isAgentCli } from './catalog.ts';
export {
  type AgentHome,
  claudeEnv,
  makeAgentHome,
  type ProviderEndpoint,
  type RetrySettings,
  writeCodexConfig,
} from './home.ts';
export {
  AGENTS_MARKER,
  type AgentBinary,
  type AgentsInstall,
  defaultAgentsDir,
  installAgents,
  resolveAgentsInstall,
} from './install.ts';
export { type RunTurnOptions, runAgentTurn, type TurnEvent, type TurnResult } from './turn.ts';
