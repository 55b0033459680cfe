// Package queue tests that every ElasticQuota gets a Queue, kept in sync and
// deleted with it, against a real API server.
package queue

import (
	"context"
	"errors"
	"fmt"
	"os"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/queue"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	os.Exit(testenv.Main(m, func(e *testenv.Env) { env = e }))
}

func startController(t *testing.T) {
	t.Helper()
	ctx := context.Background()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: schedulingv1alpha1.QueueNamespace}}
	if err := env.Client.Create(ctx, ns); err != nil && !apierrors.IsAlreadyExists(err) {
		t.Fatal(err)
	}
	stop, err := env.StartManager(ctx, func(mgr manager.Manager) error {
		if err := queue.SetupIndexes(ctx, mgr.GetFieldIndexer()); err != nil {
			return err
		}
		return queue.NewReconciler(mgr.GetClient(), mgr.GetEventRecorderFor("koord-queue"), "").SetupWithManager(mgr)
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(stop)
}

func getQueue(ctx context.Context, name string) (*schedulingv1alpha1.Queue, error) {
	q := &schedulingv1alpha1.Queue{}
	err := env.Client.Get(ctx, client.ObjectKey{Namespace: schedulingv1alpha1.QueueNamespace, Name: name}, q)
	return q, err
}

func applySeed(t *testing.T, file string) *elasticquotav1alpha1.ElasticQuota {
	t.Helper()
	objs, err := seeds.Objects(file)
	if err != nil {
		t.Fatal(err)
	}
	u := objs[0]
	if u.GetNamespace() == "" {
		u.SetNamespace(metav1.NamespaceDefault)
	}
	if err := env.Client.Create(context.Background(), u); err != nil {
		t.Fatal(err)
	}
	eq := &elasticquotav1alpha1.ElasticQuota{}
	if err := env.Scheme.Convert(u, eq, nil); err != nil {
		t.Fatal(err)
	}
	return eq
}

func TestQueuesFollowElasticQuotas(t *testing.T) {
	startController(t)
	ctx := context.Background()

	type want struct {
		policy      schedulingv1alpha1.QueuePolicy
		annotations map[string]string
	}
	seedCases := map[string]want{
		"004-elastic-quota.yaml":             {policy: schedulingv1alpha1.QueuePolicyPriority},
		"004-elastic-quota-priority.yaml":    {policy: schedulingv1alpha1.QueuePolicyPriority},
		"004-elastic-quota-block.yaml":       {policy: schedulingv1alpha1.QueuePolicyBlock},
		"004-elastic-quota-intelligent.yaml": {policy: schedulingv1alpha1.QueuePolicyIntelligent, annotations: map[string]string{schedulingv1alpha1.AnnotationPriorityThreshold: "5"}},
	}
	for file, w := range seedCases {
		t.Run("seed "+file+" gets a queue with its policy", func(t *testing.T) {
			eq := applySeed(t, file)
			testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
				q, err := getQueue(ctx, eq.Name)
				if err != nil {
					return err
				}
				if q.Spec.QueuePolicy != w.policy || !ptr.Equal(q.Spec.Priority, ptr.To[int32](1000)) {
					return fmt.Errorf("queue policy %q priority %v, want %q and 1000", q.Spec.QueuePolicy, ptr.Deref(q.Spec.Priority, -1), w.policy)
				}
				for k, v := range w.annotations {
					if q.Annotations[k] != v {
						return fmt.Errorf("annotation %s = %q, want %q", k, q.Annotations[k], v)
					}
				}
				return nil
			})
		})
	}

	t.Run("policy and annotation changes are followed, removed annotations removed", func(t *testing.T) {
		eq := &elasticquotav1alpha1.ElasticQuota{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "intelligent-queue"}, eq); err != nil {
			t.Fatal(err)
		}
		eq.Labels[schedulingv1alpha1.LabelQueuePolicy] = "Block"
		delete(eq.Annotations, schedulingv1alpha1.AnnotationPriorityThreshold)
		eq.Annotations[schedulingv1alpha1.AnnotationMaxDepth] = "10"
		eq.Annotations["unrelated.example.com/note"] = "not copied"
		if err := env.Client.Update(ctx, eq); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			q, err := getQueue(ctx, eq.Name)
			if err != nil {
				return err
			}
			got := map[string]string{}
			for k, v := range q.Annotations {
				if k != queue.AnnotationSourceNamespace && k != queue.AnnotationCopied {
					got[k] = v
				}
			}
			if diff := cmp.Diff(map[string]string{schedulingv1alpha1.AnnotationMaxDepth: "10"}, got); diff != "" || q.Spec.QueuePolicy != schedulingv1alpha1.QueuePolicyBlock {
				return fmt.Errorf("policy %s, annotations (-want +got):\n%s", q.Spec.QueuePolicy, diff)
			}
			return nil
		})
	})

	t.Run("an unknown policy falls back to Priority with a Warning event", func(t *testing.T) {
		eq := &elasticquotav1alpha1.ElasticQuota{
			ObjectMeta: metav1.ObjectMeta{Name: "typo", Namespace: "default", Labels: map[string]string{schedulingv1alpha1.LabelQueuePolicy: "Prioritty"}},
		}
		if err := env.Client.Create(ctx, eq); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			q, err := getQueue(ctx, eq.Name)
			if err != nil {
				return err
			}
			if q.Spec.QueuePolicy != schedulingv1alpha1.QueuePolicyPriority {
				return fmt.Errorf("policy %q, want Priority", q.Spec.QueuePolicy)
			}
			events := &corev1.EventList{}
			if err := env.Client.List(ctx, events, client.InNamespace("default")); err != nil {
				return err
			}
			for _, e := range events.Items {
				if e.InvolvedObject.Name == eq.Name && e.Reason == queue.ReasonUnknownQueuePolicy && e.Type == corev1.EventTypeWarning {
					return nil
				}
			}
			return errors.New("no UnknownQueuePolicy Warning event on the ElasticQuota")
		})
	})

	t.Run("the queue goes with its quota", func(t *testing.T) {
		eq := &elasticquotav1alpha1.ElasticQuota{}
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: "default", Name: "block-queue"}, eq); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, eq); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			if _, err := getQueue(ctx, eq.Name); !apierrors.IsNotFound(err) {
				return fmt.Errorf("queue still there (err %v)", err)
			}
			return nil
		})
	})

	t.Run("a deleted queue is recreated while its quota exists", func(t *testing.T) {
		q, err := getQueue(ctx, "team-a")
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, q); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			got, err := getQueue(ctx, "team-a")
			if err != nil {
				return err
			}
			if got.UID == q.UID {
				return errors.New("still the old queue")
			}
			return nil
		})
	})

	t.Run("a hand-made queue is left alone", func(t *testing.T) {
		objs, err := seeds.Objects("004-queue-intelligent.yaml")
		if err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Create(ctx, objs[0]); err != nil {
			t.Fatal(err)
		}
		// A quota of the same name appears: the user's Queue keeps its own policy.
		eq := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "my-queue", Namespace: "default"}}
		if err := env.Client.Create(ctx, eq); err != nil {
			t.Fatal(err)
		}
		if err := env.Client.Delete(ctx, eq); err != nil {
			t.Fatal(err)
		}
		// The controller has one worker and a FIFO queue: once a quota created
		// after the delete has its Queue, the delete has been reconciled.
		sentinel := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "sentinel", Namespace: "default"}}
		if err := env.Client.Create(ctx, sentinel); err != nil {
			t.Fatal(err)
		}
		testenv.Eventually(t, testenv.DefaultTimeout, func(ctx context.Context) error {
			_, err := getQueue(ctx, sentinel.Name)
			return err
		})
		q, err := getQueue(ctx, "my-queue")
		if err != nil {
			t.Fatalf("hand-made queue: %v", err)
		}
		if q.Spec.QueuePolicy != schedulingv1alpha1.QueuePolicyIntelligent {
			t.Errorf("hand-made queue policy %q, want Intelligent", q.Spec.QueuePolicy)
		}
	})
}
