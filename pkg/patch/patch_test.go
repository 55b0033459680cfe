package patch_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	"github.com/koord-queue/koord-queue/apis"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/patch"
	"github.com/koord-queue/koord-queue/pkg/queueunit"
	"github.com/koord-queue/koord-queue/pkg/testing/wrappers"
)

var unitResource = schema.GroupResource{Group: schedulingv1alpha1.GroupVersion.Group, Resource: "queueunits"}

// fakeClientWith is a fake client holding stored, with its status
// subresource.
func fakeClientWith(t *testing.T, stored *schedulingv1alpha1.QueueUnit) client.WithWatch {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := apis.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	return fake.NewClientBuilder().WithScheme(scheme).WithObjects(stored).WithStatusSubresource(stored).Build()
}

// TestPatch drives the one write path of both binaries through the failures
// an API server gives: a conflict, a timeout after the write landed or
// before it did, a timeout it cannot read back from, a refusal.
func TestPatch(t *testing.T) {
	errTimeout := apierrors.NewTimeoutError("request timed out", 1)
	// setMessage finds nothing to do once its change is made, as every
	// transition does: that is what makes a retry after a timeout safe.
	setMessage := func(u *schedulingv1alpha1.QueueUnit) bool {
		if u.Status.Message == "decided" {
			return false
		}
		u.Status.Message = "decided"
		return true
	}
	type outcome struct {
		Changed      bool
		Message      string // in the API server afterwards
		Writes       int    // patches that reached the server
		OutcomeKnown bool   // err is nil or a definite refusal
		NotFound     bool
	}
	cases := map[string]struct {
		// before runs on the server before the first write: another writer.
		before func(c client.Client, u *schedulingv1alpha1.QueueUnit)
		// patchFails fails the n-th status patch (1-based); landed: after
		// applying it.
		patchFails map[int]struct {
			err    error
			landed bool
		}
		getFails error
		mutate   func(*schedulingv1alpha1.QueueUnit) bool
		want     outcome
	}{
		"written at once": {
			mutate: setMessage,
			want:   outcome{Changed: true, Message: "decided", Writes: 1, OutcomeKnown: true},
		},
		"nothing to write: no request is made": {
			mutate: func(*schedulingv1alpha1.QueueUnit) bool { return false },
			want:   outcome{Message: "", OutcomeKnown: true},
		},
		"a mutate that changes nothing makes no request": {
			mutate: func(*schedulingv1alpha1.QueueUnit) bool { return true },
			want:   outcome{Message: "", OutcomeKnown: true},
		},
		"a conflict is retried on the server's data": {
			before: func(c client.Client, u *schedulingv1alpha1.QueueUnit) {
				fresh := u.DeepCopy()
				fresh.Status.Phase = schedulingv1alpha1.Running
				if err := c.Status().Update(context.Background(), fresh); err != nil {
					panic(err)
				}
			},
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				if u.Status.Phase != schedulingv1alpha1.Running {
					return setMessage(u) // decided on stale data: must not land
				}
				u.Status.Message = "decided on fresh data"
				return true
			},
			want: outcome{Changed: true, Message: "decided on fresh data", Writes: 2, OutcomeKnown: true},
		},
		"a timeout after the write landed: read back, found done": {
			patchFails: map[int]struct {
				err    error
				landed bool
			}{1: {errTimeout, true}},
			mutate: setMessage,
			want:   outcome{Changed: false, Message: "decided", Writes: 1, OutcomeKnown: true},
		},
		"a timeout before the write landed: read back and written": {
			patchFails: map[int]struct {
				err    error
				landed bool
			}{1: {errTimeout, false}},
			mutate: setMessage,
			want:   outcome{Changed: true, Message: "decided", Writes: 2, OutcomeKnown: true},
		},
		"a timeout that cannot be read back: the outcome is unknown": {
			patchFails: map[int]struct {
				err    error
				landed bool
			}{1: {errTimeout, true}},
			getFails: errors.New("connection refused"),
			mutate:   setMessage,
			want:     outcome{Message: "decided", Writes: 1},
		},
		"a refusal is returned as it is": {
			patchFails: map[int]struct {
				err    error
				landed bool
			}{1: {apierrors.NewNotFound(unitResource, "u"), false}},
			mutate: setMessage,
			want:   outcome{Message: "", Writes: 1, OutcomeKnown: true, NotFound: true},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			stored := &schedulingv1alpha1.QueueUnit{ObjectMeta: metav1.ObjectMeta{Namespace: "ns", Name: "u"}}
			base := fakeClientWith(t, stored)
			writes := 0
			c := interceptor.NewClient(base, interceptor.Funcs{
				SubResourcePatch: func(ctx context.Context, c client.Client, sub string, obj client.Object, patch client.Patch, opts ...client.SubResourcePatchOption) error {
					writes++
					if f, ok := tc.patchFails[writes]; ok {
						if f.landed {
							if err := c.SubResource(sub).Patch(ctx, obj, patch, opts...); err != nil {
								return err
							}
						}
						return f.err
					}
					return c.SubResource(sub).Patch(ctx, obj, patch, opts...)
				},
				Get: func(ctx context.Context, c client.WithWatch, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
					if tc.getFails != nil {
						return tc.getFails
					}
					return c.Get(ctx, key, obj, opts...)
				},
			})
			u := &schedulingv1alpha1.QueueUnit{}
			if err := base.Get(ctx, client.ObjectKeyFromObject(stored), u); err != nil {
				t.Fatal(err)
			}
			if tc.before != nil {
				tc.before(base, u)
			}
			changed, err := patch.Patch(ctx, c, c, u, patch.Status, "test", tc.mutate)
			inAPI := &schedulingv1alpha1.QueueUnit{}
			if err := base.Get(ctx, client.ObjectKeyFromObject(stored), inAPI); err != nil {
				t.Fatal(err)
			}
			got := outcome{Changed: changed, Message: inAPI.Status.Message, Writes: writes,
				OutcomeKnown: !errors.Is(err, patch.ErrOutcomeUnknown), NotFound: apierrors.IsNotFound(err)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Patch (-want +got):\n%s\nerr: %v", diff, err)
			}
			if (err != nil) != (!got.OutcomeKnown || got.NotFound) {
				t.Errorf("Patch error %v", err)
			}
		})
	}
}

// TestPatchRefusesResizingAUnitThatHoldsQuota: a unit is charged its size
// when admitted; a resize an extension decided while the unit waited must
// not land on it once admitted (the conflict's retry reads the admitted
// unit), nor on an evicted unit whose pods still run. Other spec writes,
// such as the pin of the admitting queue, still land.
func TestPatchRefusesResizingAUnitThatHoldsQuota(t *testing.T) {
	waiting := func() *schedulingv1alpha1.QueueUnit {
		return wrappers.MakeQueueUnit("u", "ns").PodSet("main", 2, "cpu", "1").Phase(schedulingv1alpha1.Enqueued).Obj()
	}
	admit := func(u *schedulingv1alpha1.QueueUnit) {
		u.Status.Phase = schedulingv1alpha1.Dequeued
		u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2}}
	}
	resizeTo6 := func(u *schedulingv1alpha1.QueueUnit) bool {
		u.Spec.PodSets[0].Count = 6
		return true
	}
	type outcome struct {
		Count      int32  // of the first pod set in the API server afterwards
		Name       string // of the first pod set, when not main
		Queue      string
		HoldsQuota bool // the error is ErrHoldsQuota
		Conflicts  int
	}
	cases := map[string]struct {
		stored *schedulingv1alpha1.QueueUnit
		// meanwhile runs on the server after the caller read the unit and
		// before it writes: koord-queue admits it.
		meanwhile func(*schedulingv1alpha1.QueueUnit)
		mutate    func(*schedulingv1alpha1.QueueUnit) bool
		want      outcome
	}{
		"a waiting unit is resized": {
			stored: waiting(),
			mutate: resizeTo6,
			want:   outcome{Count: 6},
		},
		"admitted while the resize was decided: the retry on the admitted unit refuses it": {
			stored:    waiting(),
			meanwhile: admit,
			mutate:    resizeTo6,
			want:      outcome{Count: 2, HoldsQuota: true, Conflicts: 1},
		},
		"evicted, its pods not gone yet (its admissions listed): refused": {
			stored: func() *schedulingv1alpha1.QueueUnit {
				u := waiting()
				u.Status.Admissions = []schedulingv1alpha1.Admission{{Name: "main", Replicas: 2, Running: 2}}
				return u
			}(),
			mutate: resizeTo6,
			want:   outcome{Count: 2, HoldsQuota: true},
		},
		"an admitted unit's pod set renamed, as adopting Koord-Queue's unit does: not a resize": {
			stored: func() *schedulingv1alpha1.QueueUnit {
				u := waiting()
				admit(u)
				return u
			}(),
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Spec.PodSets[0].Name = "workers"
				return true
			},
			want: outcome{Count: 2, Name: "workers"},
		},
		"the admitting queue is pinned on an admitted unit": {
			stored:    waiting(),
			meanwhile: admit,
			mutate: func(u *schedulingv1alpha1.QueueUnit) bool {
				u.Spec.Queue = "team"
				return true
			},
			want: outcome{Count: 2, Queue: "team", Conflicts: 1},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			base := fakeClientWith(t, tc.stored)
			conflicts := 0
			c := interceptor.NewClient(base, interceptor.Funcs{
				Patch: func(ctx context.Context, c client.WithWatch, obj client.Object, patch client.Patch, opts ...client.PatchOption) error {
					err := c.Patch(ctx, obj, patch, opts...)
					if apierrors.IsConflict(err) {
						conflicts++
					}
					return err
				},
			})
			u := &schedulingv1alpha1.QueueUnit{}
			if err := base.Get(ctx, client.ObjectKeyFromObject(tc.stored), u); err != nil {
				t.Fatal(err)
			}
			if tc.meanwhile != nil {
				fresh := u.DeepCopy()
				tc.meanwhile(fresh)
				if err := base.Status().Update(ctx, fresh); err != nil {
					t.Fatal(err)
				}
			}
			_, err := patch.Patch(ctx, c, c, u, patch.Main, "test", tc.mutate)
			inAPI := &schedulingv1alpha1.QueueUnit{}
			if err := base.Get(ctx, client.ObjectKeyFromObject(tc.stored), inAPI); err != nil {
				t.Fatal(err)
			}
			got := outcome{Count: inAPI.Spec.PodSets[0].Count, Queue: inAPI.Spec.Queue,
				Name:       strings.TrimPrefix(inAPI.Spec.PodSets[0].Name, "main"),
				HoldsQuota: errors.Is(err, queueunit.ErrHoldsQuota), Conflicts: conflicts}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Patch (-want +got):\n%s\nerr: %v", diff, err)
			}
			if err != nil && !got.HoldsQuota {
				t.Errorf("Patch: %v", err)
			}
			if got.HoldsQuota && u.Spec.PodSets[0].Count != 2 {
				t.Errorf("refused, yet the caller's copy asks for %d pods, not the 2 the server holds", u.Spec.PodSets[0].Count)
			}
		})
	}
}
