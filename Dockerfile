# fleetbench as a container image, for distributed matrices on Kubernetes (docs/distributed.md):
#   docker build -t fleetbench:local .
#   docker run --rm fleetbench:local matrix --cells priority --jobs 2 --out /results/m
# The entrypoint is the CLI; Kubernetes pods pass the command's arguments (`args`).
FROM node:20-bookworm-slim

WORKDIR /app
# Dependencies first, so a source change does not reinstall them. Runtime dependencies only:
# tsx and esbuild are among them (the CLI runs the TypeScript sources, bundled on first use).
COPY package.json package-lock.json ./
RUN npm ci --omit=dev && npm cache clean --force

COPY bin ./bin
COPY src ./src
COPY scenarios ./scenarios
COPY budgets ./budgets
COPY examples ./examples
COPY tsconfig.json README.md ./

# Build the CLI bundle now (node_modules/.cache/fleetbench), as the user that runs it, so a pod
# does not pay for it at start.
RUN chown -R node:node /app
USER node
RUN node bin/fleetbench.js --version

ENV NO_COLOR=1
ENTRYPOINT ["node", "/app/bin/fleetbench.js"]
CMD ["--help"]
