// Package rbac declares, as kubebuilder RBAC markers, what
// koord-queue-controllers may do: the rules every extension needs (common),
// each extension's own, in a package named as --enabled-extensions names it,
// and the webhook's. `make generate` turns each package into a rule file of
// the Helm chart (charts/koord-queue/files/rbac/extensions/), and the chart
// grants only the enabled extensions' rules.
package rbac
