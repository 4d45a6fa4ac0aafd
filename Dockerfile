# syntax=docker/dockerfile:1
# One image, both roles: `leaderhook webhook` and `leaderhook release`.
# Keep in step with scripts/build-local-image.sh, which builds the same layout
# from a local root filesystem for the end-to-end tests (no Docker there).
ARG NODE_VERSION=24.21.0

FROM node:${NODE_VERSION}-bookworm-slim AS build
WORKDIR /src
COPY package.json package-lock.json ./
RUN npm ci
COPY tsconfig.json tsconfig.build.json ./
COPY src ./src
RUN npm run build && npm prune --omit=dev

FROM node:${NODE_VERSION}-bookworm-slim
ENV NODE_ENV=production
WORKDIR /app
COPY --from=build /src/package.json ./package.json
COPY --from=build /src/node_modules ./node_modules
COPY --from=build /src/dist ./dist
# Runs with a read-only root filesystem: nothing is written at run time.
USER 65532:65532
ENTRYPOINT ["node", "/app/dist/cli.js"]
CMD ["--help"]
