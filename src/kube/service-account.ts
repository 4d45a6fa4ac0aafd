/**
 * Where Kubernetes mounts a pod's service-account token, CA and namespace, and
 * where client libraries (this one too) look for them.
 */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount';
