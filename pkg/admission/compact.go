package admission

import (
	"unique"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// CompactUnit makes a QueueUnit as an informer decoded it cheaper to keep,
// and leaves it reading exactly as before. A decoder gives every list and
// every string of every object an allocation of its own; of a unit's:
//
//   - spec.request, and the resources of an admission, equal to
//     spec.resource (as the extensions write spec.request, and as a unit
//     without pod sets is admitted) become spec.resource's map: about 700
//     bytes each;
//   - the strings that units repeat (their namespace, label and annotation
//     keys and values, their owner's and consumer's kinds, pod set names,
//     conditions' types, reasons and messages, the status message) become
//     one copy each while any unit keeps it (unique.Make).
//
// The unit must not be changed in place afterwards: an informer's objects
// never are (every writer changes a copy), and a copy (DeepCopy) has lists
// of its own again.
func CompactUnit(u *schedulingv1alpha1.QueueUnit) {
	spec, st := &u.Spec, &u.Status
	if sameList(spec.Request, spec.Resource) {
		spec.Request = spec.Resource
	}
	for i := range st.Admissions {
		a := &st.Admissions[i]
		a.Name = intern(a.Name)
		if sameList(a.Resources, spec.Resource) {
			a.Resources = spec.Resource
		}
	}

	u.Namespace = intern(u.Namespace)
	u.Labels = internMap(u.Labels)
	u.Annotations = internMap(u.Annotations)
	for i := range u.OwnerReferences {
		o := &u.OwnerReferences[i]
		o.APIVersion, o.Kind = intern(o.APIVersion), intern(o.Kind)
	}
	if c := spec.ConsumerRef; c != nil {
		c.APIVersion, c.Kind, c.Namespace = intern(c.APIVersion), intern(c.Kind), intern(c.Namespace)
	}
	spec.Queue, spec.PriorityClassName = intern(spec.Queue), intern(spec.PriorityClassName)
	for i := range spec.PodSets {
		spec.PodSets[i].Name = intern(spec.PodSets[i].Name)
	}
	st.Message = intern(st.Message)
	for i := range st.Conditions {
		internCondition(&st.Conditions[i])
	}
	for i := range st.AdmissionChecks {
		c := &st.AdmissionChecks[i]
		c.Name, c.Message = intern(c.Name), intern(c.Message)
	}
}

// sameList reports whether a and b, both set, list the same amounts
// written the same way: sharing one map for both then reads as the two did.
func sameList(a, b corev1.ResourceList) bool {
	if len(a) == 0 || len(a) != len(b) {
		return false
	}
	for name, qa := range a {
		qb, ok := b[name]
		if !ok || qa.Cmp(qb) != 0 || qa.String() != qb.String() {
			return false
		}
	}
	return true
}

func internCondition(c *metav1.Condition) {
	c.Type, c.Reason, c.Message = intern(c.Type), intern(c.Reason), intern(c.Message)
}

// internMap is m with its keys and values interned: a map of the same size.
func internMap(m map[string]string) map[string]string {
	if len(m) == 0 {
		return m
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[intern(k)] = intern(v)
	}
	return out
}

// intern is s, sharing its bytes with every other string of its value
// interned while either is kept.
func intern(s string) string {
	if s == "" {
		return s
	}
	return unique.Make(s).Value()
}
