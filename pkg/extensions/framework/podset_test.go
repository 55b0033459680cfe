package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/wrappers"
)

func templateWith(labels, nodeSelector map[string]string, tolerations ...corev1.Toleration) corev1.PodTemplateSpec {
	t := wrappers.PodTemplate("cpu", "1")
	t.Labels = labels
	t.Spec.NodeSelector = nodeSelector
	t.Spec.Tolerations = tolerations
	return t
}

var gpuToleration = corev1.Toleration{Key: "gpu", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoSchedule}

func TestApplyPodSetUpdates(t *testing.T) {
	cases := map[string]struct {
		template    corev1.PodTemplateSpec
		updates     []schedulingv1alpha1.PodSetUpdate
		want        corev1.PodTemplateSpec
		wantUnknown []string
	}{
		"node selectors and labels merge, the update winning": {
			template: templateWith(map[string]string{"app": "a", "tier": "x"}, map[string]string{"zone": "a"}),
			updates: []schedulingv1alpha1.PodSetUpdate{{Name: "main",
				Labels: map[string]string{"tier": "y"}, NodeSelector: map[string]string{"zone": "b", "disk": "ssd"}}},
			want: templateWith(map[string]string{"app": "a", "tier": "y"}, map[string]string{"zone": "b", "disk": "ssd"}),
		},
		"a toleration is added once": {
			template: templateWith(nil, nil, gpuToleration),
			updates:  []schedulingv1alpha1.PodSetUpdate{{Name: "main", Tolerations: []corev1.Toleration{gpuToleration}}},
			want:     templateWith(nil, nil, gpuToleration),
		},
		"an update for a pod set the job lacks is reported": {
			template:    templateWith(nil, nil),
			updates:     []schedulingv1alpha1.PodSetUpdate{{Name: "workers", NodeSelector: map[string]string{"zone": "b"}}},
			want:        templateWith(nil, nil),
			wantUnknown: []string{"workers"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.template.DeepCopy()
			unknown := applyPodSetUpdates([]PodSet{{Name: "main", Template: tmpl}},
				[]schedulingv1alpha1.AdmissionCheckState{{Name: "check", PodSetUpdates: tc.updates}})
			if diff := cmp.Diff(tc.want, *tmpl); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantUnknown, unknown); diff != "" {
				t.Errorf("unknown pod sets (-want +got):\n%s", diff)
			}
		})
	}
}

func TestRestorePodSets(t *testing.T) {
	queued := templateWith(map[string]string{"app": "a"}, map[string]string{"zone": "a"})
	originals := recordOriginals([]PodSet{{Name: "main", Template: &queued}})

	// The originals go through the unit's annotation and back.
	u := wrappers.MakeQueueUnit("u", "ns").Obj()
	if !keepOriginals(u, originals) || keepOriginals(u, originals) {
		t.Fatalf("keepOriginals should change the unit once")
	}
	read, err := originalsOf(u)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(originals, read); diff != "" {
		t.Fatalf("originals after the annotation (-want +got):\n%s", diff)
	}

	cases := map[string]struct {
		template    corev1.PodTemplateSpec
		wantChanged bool
	}{
		"updates are undone": {
			template:    templateWith(map[string]string{"app": "a", "tier": "y"}, map[string]string{"zone": "b"}, gpuToleration),
			wantChanged: true,
		},
		"a template as queued is left alone": {
			template: queued,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.template.DeepCopy()
			changed := restorePodSets([]PodSet{{Name: "main", Template: tmpl}, {Name: "other"}}, read)
			if changed != tc.wantChanged {
				t.Errorf("changed = %v, want %v", changed, tc.wantChanged)
			}
			if diff := cmp.Diff(queued, *tmpl); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
		})
	}

	if !keepOriginals(u, nil) || u.Annotations[schedulingv1alpha1.AnnotationPodSetOriginals] != "" {
		t.Errorf("keepOriginals(nil) left %v", u.Annotations)
	}
}
