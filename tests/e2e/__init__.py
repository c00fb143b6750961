"""End-to-end tests against a real etcd, kube-apiserver and kube-scheduler."""
