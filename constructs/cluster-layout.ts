/** Static host numbers within each network, by role (see docs/architecture.md). */
export const HOSTS = {
  publicGateway: 1,
  bastionPublic: 10,
  kubeMasterPublic: 11,
  bastionPrivate: 1,
  saltMasterPrivate: 5,
  kubeMasterPrivate: 10,
  firstWorkerPrivate: 100,
} as const;
