/** How large a cluster can be, and how many of its nodes hold the control plane. */

/**
 * The most workers the layout can name: their lists come from Terraform's range(), which stops
 * at 1024 values (go-cty's function/stdlib/sequence.go: "more than 1024 values were generated").
 */
export const MAX_WORKERS = 1024;

/**
 * The most Kubernetes nodes a cluster has, the master and every pool's workers counted: a plan's
 * time grows faster than its nodes (`npm run bench` on 2 cores: 100 nodes 6.6 s, this cap 32 s;
 * 1,025 nodes took 285 s, and only then failed on a quota read of its first seconds).
 */
export const MAX_NODES = 256;

/** microk8s HA needs three dqlite voters: the first nodes (the master first) are the control plane. */
export const CONTROL_PLANE_SIZE = 3;
