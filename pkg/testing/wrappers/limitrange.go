package wrappers

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// LimitRangeWrapper builds a LimitRange.
type LimitRangeWrapper struct{ corev1.LimitRange }

// MakeLimitRange starts a LimitRange of no items.
func MakeLimitRange(name, namespace string) *LimitRangeWrapper {
	return &LimitRangeWrapper{corev1.LimitRange{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: namespace}}}
}

// Container adds an item of type Container giving containers the default
// limits def and the default requests defRequest (either may be nil).
func (w *LimitRangeWrapper) Container(def, defRequest corev1.ResourceList) *LimitRangeWrapper {
	return w.Item(corev1.LimitRangeItem{Type: corev1.LimitTypeContainer, Default: def, DefaultRequest: defRequest})
}

// Item adds item.
func (w *LimitRangeWrapper) Item(item corev1.LimitRangeItem) *LimitRangeWrapper {
	w.Spec.Limits = append(w.Spec.Limits, item)
	return w
}

// Obj returns the LimitRange.
func (w *LimitRangeWrapper) Obj() *corev1.LimitRange { return &w.LimitRange }
