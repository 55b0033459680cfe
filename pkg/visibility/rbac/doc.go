// Package rbac declares, one package per file of the chart, what
// koord-queue needs for its aggregated visibility API beyond its own
// ClusterRole (cmd/queue/app): `make generate` turns the markers into
// charts/koord-queue/files/rbac/visibility-api/*.yaml, which the chart
// grants only with visibility.aggregatedAPI.enable. Reading the API
// server's authentication ConfigMap is the built-in Role
// extension-apiserver-authentication-reader, bound by the chart in
// kube-system; TokenReviews and SubjectAccessReviews are in koord-queue's
// ClusterRole already (the REST API asks them too).
package rbac
