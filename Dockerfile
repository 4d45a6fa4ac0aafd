# syntax=docker/dockerfile:1
# One image, both roles: `leaderhook webhook` and `leaderhook release`.
# The test pipeline builds this very file (scripts/build-local-image.sh, with
# buildah) with both bases pointed at Node images assembled locally from the
# pinned `node` package, since no registry is reachable there.
#
# NODE_VERSION is the version of the `node` devDependency (a unit test holds
# them together). BUILD_IMAGE must have npm; BASE_IMAGE needs only Node.
ARG NODE_VERSION=24.21.0
ARG BUILD_IMAGE=node:${NODE_VERSION}-bookworm-slim
ARG BASE_IMAGE=node:${NODE_VERSION}-bookworm-slim

FROM ${BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the only install script is the `node` devDependency's,
# which would download a second Node; the build runs on the base's.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund

FROM ${BASE_IMAGE}
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# Runs with a read-only root filesystem: nothing is written at run time.
USER 65532:65532
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["--help"]
