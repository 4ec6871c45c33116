# fleetbench as a container image, for distributed matrices on Kubernetes (docs/distributed.md):
#   docker build -t fleetbench:local .
#   docker run --rm fleetbench:local matrix --cells priority --jobs 2 --out /results/m
# The entrypoint is the CLI; Kubernetes pods pass the command's arguments (`args`).
#
# Two stages: the first packs fleetbench as npm does (`npm pack` compiles dist/, scripts/build.ts),
# the second installs that tarball as a user would: compiled JavaScript and the runtime
# dependencies only (docs/contributing.md, "The package"). Node 24, the current LTS: one of the
# maintained lines fleetbench is tested on (22, 24, 26; test/node-versions.test.ts keeps them one list).
FROM node:24-bookworm-slim AS pack
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci --no-audit --no-fund
COPY bin ./bin
COPY src ./src
COPY scripts ./scripts
COPY scenarios ./scenarios
COPY budgets ./budgets
COPY docs ./docs
COPY examples ./examples
COPY tsconfig.json tsconfig.types.json README.md LICENSE ./
RUN npm pack --pack-destination /pack

FROM node:24-bookworm-slim
WORKDIR /app
COPY --from=pack /pack/ /pack/
RUN echo '{"name":"fleetbench-image","private":true}' > package.json \
  && npm install --no-audit --no-fund /pack/fleetbench-*.tgz \
  && rm -rf /pack && npm cache clean --force \
  && chown -R node:node /app
USER node
RUN node node_modules/fleetbench/bin/fleetbench.js --version

ENV NO_COLOR=1
ENTRYPOINT ["node", "/app/node_modules/fleetbench/bin/fleetbench.js"]
CMD ["--help"]
