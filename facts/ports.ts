/** The ports the cluster's services listen on, which the security groups and load balancers open. */

/** microk8s' Kubernetes API server (its `--secure-port`). */
export const KUBE_API_PORT = 16443;

/** The Salt master's publish and return ports. */
export const SALT_PORTS = { publish: 4505, ret: 4506 } as const;

/** The Kubernetes NodePort range, where Octavia's members of LoadBalancer Services listen. */
export const NODE_PORTS = { min: 30000, max: 32767 } as const;
