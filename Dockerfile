# syntax=docker/dockerfile:1
# One image, both roles: `leaderhook webhook` and `leaderhook release`.
# The test pipeline builds this very file (scripts/build-local-image.sh, with
# buildah) with both bases pointed at Node images assembled locally from the
# pinned `node` package, since no registry is reachable there.
#
# NODE_VERSION is the version of the `node` devDependency (a unit test holds
# them together). BUILD_IMAGE must have npm; BASE_IMAGE needs only Node.
#
# VERSION, REVISION, CREATED and SOURCE become the org.opencontainers.image.*
# labels, and REVISION also what `leaderhook version` names. The release and
# the tests pass them (scripts/release/metadata.ts computes them); a build of
# your own should too:
#   docker build --build-arg VERSION="$(node -p 'require("./package.json").version')" \
#     --build-arg REVISION="$(git rev-parse HEAD)" .
ARG NODE_VERSION=24.21.0
ARG BUILD_IMAGE=node:${NODE_VERSION}-bookworm-slim
ARG BASE_IMAGE=node:${NODE_VERSION}-bookworm-slim
ARG VERSION=""
ARG REVISION=""
ARG CREATED=""
ARG SOURCE=""

# The build stage runs on the building machine's platform whatever the
# target's: it makes only JavaScript (no dependency has a native addon), so
# an arm64 image needs no emulator, and shares these layers with the amd64 one.
FROM --platform=${BUILDPLATFORM} ${BUILD_IMAGE} AS build
WORKDIR /src
COPY package.json package-lock.json ./
# --ignore-scripts: the only install script is the `node` devDependency's,
# which would download a second Node; the build runs on the base's.
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev --ignore-scripts --no-audit --no-fund
# Last, so that a new commit reruns only this step.
ARG REVISION
COPY scripts/build-info.ts ./scripts/
RUN LEADERHOOK_REVISION="${REVISION}" node scripts/build-info.ts dist

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
ARG VERSION
ARG REVISION
ARG CREATED
ARG SOURCE
LABEL org.opencontainers.image.title="leaderhook" \
      org.opencontainers.image.licenses="Apache-2.0" \
      org.opencontainers.image.version="${VERSION}" \
      org.opencontainers.image.revision="${REVISION}" \
      org.opencontainers.image.created="${CREATED}" \
      org.opencontainers.image.source="${SOURCE}"
