package framework

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
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
		template   corev1.PodTemplateSpec
		updates    []schedulingv1alpha1.PodSetUpdate
		madeUp     bool
		want       corev1.PodTemplateSpec
		wantMissed missedUpdates
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
		"an update for a pod set the job lacks is reported, once": {
			template: templateWith(nil, nil),
			updates: []schedulingv1alpha1.PodSetUpdate{
				{Name: "workers", NodeSelector: map[string]string{"zone": "b"}},
				{Name: "workers", Labels: map[string]string{"tier": "y"}},
			},
			want:       templateWith(nil, nil),
			wantMissed: missedUpdates{Unknown: []string{"workers"}},
		},
		"an update for a made-up template is reported, not applied": {
			template:   templateWith(nil, nil),
			madeUp:     true,
			updates:    []schedulingv1alpha1.PodSetUpdate{{Name: "main", NodeSelector: map[string]string{"zone": "b"}}},
			want:       templateWith(nil, nil),
			wantMissed: missedUpdates{MadeUp: []string{"main"}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			tmpl := tc.template.DeepCopy()
			missed := applyPodSetUpdates([]PodSet{{Name: "main", Template: tmpl, MadeUp: tc.madeUp}},
				[]schedulingv1alpha1.AdmissionCheckState{{Name: "check", PodSetUpdates: tc.updates}}, nil, nil)
			if diff := cmp.Diff(tc.want, *tmpl); diff != "" {
				t.Errorf("template (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMissed, missed); diff != "" {
				t.Errorf("updates not applied (-want +got):\n%s", diff)
			}
		})
	}
}

func TestMissedUpdatesSayWhy(t *testing.T) {
	got := missedUpdates{Unknown: []string{"workers"}, MadeUp: []string{"driver", "executor"}}.String()
	want := "Admission checks' pod set updates were not applied: the job has no pod set workers; " +
		"the pods of driver, executor are made by the framework from templates the job does not hold"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("message (-want +got):\n%s", diff)
	}
}

func TestRestorePodSets(t *testing.T) {
	queued := templateWith(map[string]string{"app": "a"}, map[string]string{"zone": "a"})
	originals := recordOriginals([]PodSet{{Name: "main", Template: &queued}}, nil)

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
			changed := restorePodSets([]PodSet{{Name: "main", Template: tmpl}, {Name: "other"}}, read, nil)
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

// TestRestoreKeepsTheUnitNames: a template restored to what it was before
// its pod set updates keeps the names of its unit the release gave it.
func TestRestoreKeepsTheUnitNames(t *testing.T) {
	tmpl := &corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{"team": "a"}}}
	sets := []PodSet{{Name: "main", Template: tmpl}}
	originals := recordOriginals(sets, nil)
	unit := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "j"}}
	nameForUnit(sets, unit)
	tmpl.Annotations["added-by-a-check"] = "x"
	restorePodSets(sets, originals, nil)
	want := map[string]string{"team": "a", schedulingv1alpha1.AnnotationRelatedQueueUnit: "ns/j", schedulingv1alpha1.AnnotationRelatedPodSet: "main"}
	if diff := cmp.Diff(want, tmpl.Annotations); diff != "" {
		t.Errorf("annotations restored (-want +got):\n%s", diff)
	}
	if !namedForUnit(sets, unit) {
		t.Errorf("the restored template no longer names its unit")
	}
}
