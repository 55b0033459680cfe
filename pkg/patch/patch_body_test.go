package patch_test

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

// TestPatchSendsWhatChangedLockedOnTheResourceVersion: the body of a write
// is a merge patch of what mutate changed and the resourceVersion it was
// decided on, nothing else, whether or not the change touches metadata.
func TestPatchSendsWhatChangedLockedOnTheResourceVersion(t *testing.T) {
	cases := map[string]struct {
		part   patch.Part
		mutate func(*schedulingv1alpha1.QueueUnit) bool
		want   string
	}{
		"a status change": {
			part: patch.Status,
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Status.Message = "Waiting for <quota> & more"
				return true
			},
			want: `{"metadata":{"resourceVersion":"7"},"status":{"message":"Waiting for \u003cquota\u003e \u0026 more"}}`,
		},
		"a status change beside a spec's: the status subresource keeps only the status": {
			part: patch.Status,
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Status.Message = "Running"
				u.Spec.Priority = new(int32)
				u.Annotations = map[string]string{"a": "b"}
				return true
			},
			want: `{"metadata":{"resourceVersion":"7"},"status":{"message":"Running"}}`,
		},
		"a status change made in place, deep in the status": {
			part: patch.Status,
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Status.Conditions[0].Message = "now"
				return true
			},
			want: `{"metadata":{"resourceVersion":"7"},"status":{"conditions":[{"lastTransitionTime":null,"message":"now","reason":"","status":"True","type":"Admitted"}]}}`,
		},
		"a change of metadata and spec": {
			part: patch.Main,
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Annotations = map[string]string{"a": "b"}
				delete(u.Labels, "drop")
				u.Spec.Priority = new(int32)
				*u.Spec.Priority = 2147483647
				return true
			},
			want: `{"metadata":{"annotations":{"a":"b"},"labels":{"drop":null},"resourceVersion":"7"},"spec":{"priority":2147483647}}`,
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			u := wrappers.MakeQueueUnit("u", "ns").Label("keep", "y").Label("drop", "x").PodSet("main", 2, "cpu", "1").Obj()
			u.ResourceVersion = "7"
			u.Status.Conditions = []metav1.Condition{{Type: "Admitted", Status: metav1.ConditionTrue, Message: "then"}}
			var got string
			record := func(obj client.Object, p client.Patch) error {
				data, err := p.Data(obj)
				got = string(data)
				return err
			}
			c := interceptor.NewClient(fakeClientWith(t, u.DeepCopy()), interceptor.Funcs{
				Patch: func(_ context.Context, _ client.WithWatch, obj client.Object, p client.Patch, _ ...client.PatchOption) error {
					return record(obj, p)
				},
				SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
					return record(obj, p)
				},
			})
			if _, err := patch.Patch(context.Background(), c, c, u, tc.part, "test", tc.mutate); err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("patch body (-want +got):\n%s", diff)
			}
		})
	}
}

// BenchmarkPatch is what Patch costs the caller to write one status change
// of a unit with a pod set, the client sending the body it is given
// (client.Patch.Data) and the server's answer left out.
func BenchmarkPatch(b *testing.B) {
	u := wrappers.MakeQueueUnit("u", "ns").Quota("team").PodSet("main", 4, "cpu", "1", "memory", "2Gi").
		Phase(schedulingv1alpha1.Enqueued).Obj()
	u.ResourceVersion = "7"
	c := interceptor.NewClient(nil, interceptor.Funcs{
		SubResourcePatch: func(_ context.Context, _ client.Client, _ string, obj client.Object, p client.Patch, _ ...client.SubResourcePatchOption) error {
			_, err := p.Data(obj)
			return err
		},
	})
	ctx := context.Background()
	n := 0
	b.ReportAllocs()
	for b.Loop() {
		n++
		if _, err := patch.Patch(ctx, c, nil, u, patch.Status, "bench", func(u *schedulingv1alpha1.QueueUnit) bool {
			u.Status.Message = map[bool]string{true: "a", false: "b"}[n%2 == 0]
			return true
		}); err != nil {
			b.Fatal(err)
		}
	}
}
