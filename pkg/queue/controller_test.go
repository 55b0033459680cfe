package queue

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/tools/record"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
)

// TestAdoptKoordQueueQueues: a Queue Koord-Queue v1.8 made for an
// ElasticQuota (its parent label or its quota-koord-queue-enable annotation,
// no koord-queue/managed-by label) is adopted and follows its quota's policy
// label from then on; a Queue made by hand is left as it is.
func TestAdoptKoordQueueQueues(t *testing.T) {
	quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "quotas",
		Labels:      map[string]string{schedulingv1alpha1.LabelQueuePolicy: "Block", elasticquotav1alpha1.LabelQuotaParent: ""},
		Annotations: map[string]string{"quota.scheduling.koordinator.sh/runtime": "{}"}}}
	queue := func(labels, annotations map[string]string) *schedulingv1alpha1.Queue {
		return &schedulingv1alpha1.Queue{
			ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: schedulingv1alpha1.QueueNamespace, Labels: labels, Annotations: annotations},
			Spec:       schedulingv1alpha1.QueueSpec{QueuePolicy: schedulingv1alpha1.QueuePolicyPriority, Priority: ptr.To[int32](1000)},
		}
	}
	cases := map[string]struct {
		queue      *schedulingv1alpha1.Queue
		wantPolicy schedulingv1alpha1.QueuePolicy
		wantLabel  string
	}{
		"Koord-Queue's Queue with the parent label is adopted": {
			queue:      queue(map[string]string{elasticquotav1alpha1.LabelQuotaParent: ""}, map[string]string{AnnotationKoordQueueEnable: ""}),
			wantPolicy: schedulingv1alpha1.QueuePolicyBlock,
			wantLabel:  ManagedByElasticQuota,
		},
		"Koord-Queue's Queue of a quota without labels (its annotation only) is adopted": {
			queue:      queue(map[string]string{}, map[string]string{AnnotationKoordQueueEnable: ""}),
			wantPolicy: schedulingv1alpha1.QueuePolicyBlock,
			wantLabel:  ManagedByElasticQuota,
		},
		"a Queue made by hand is left alone": {
			queue:      queue(nil, map[string]string{schedulingv1alpha1.AnnotationPriorityThreshold: "5"}),
			wantPolicy: schedulingv1alpha1.QueuePolicyPriority,
		},
		"a Queue labelled by its user as theirs is left alone": {
			queue:      queue(map[string]string{LabelManagedBy: "me", elasticquotav1alpha1.LabelQuotaParent: ""}, nil),
			wantPolicy: schedulingv1alpha1.QueuePolicyPriority,
			wantLabel:  "me",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			scheme := testScheme(t)
			c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(quota.DeepCopy(), tc.queue).
				WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexElasticQuotaName, func(o client.Object) []string { return []string{o.GetName()} }).
				Build()
			r := NewReconciler(c, record.NewFakeRecorder(10), "")
			for range 2 { // adopted once, then nothing to do
				if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "team-a"}}); err != nil {
					t.Fatalf("Reconcile: %v", err)
				}
			}
			var got schedulingv1alpha1.Queue
			if err := c.Get(ctx, client.ObjectKeyFromObject(tc.queue), &got); err != nil {
				t.Fatal(err)
			}
			type seen struct {
				Policy schedulingv1alpha1.QueuePolicy
				Label  string
			}
			if diff := cmp.Diff(seen{tc.wantPolicy, tc.wantLabel}, seen{got.Spec.QueuePolicy, got.Labels[LabelManagedBy]}); diff != "" {
				t.Errorf("Queue (-want +got):\n%s", diff)
			}
		})
	}
}

// TestQueuesLiveInTheNamespaceChosen: with --queue-namespace queues, an
// ElasticQuota's Queue is made there, not in koord-queue.
func TestQueuesLiveInTheNamespaceChosen(t *testing.T) {
	ctx := context.Background()
	scheme := testScheme(t)
	quota := &elasticquotav1alpha1.ElasticQuota{ObjectMeta: metav1.ObjectMeta{Name: "team-a", Namespace: "quotas"}}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(quota).
		WithIndex(&elasticquotav1alpha1.ElasticQuota{}, IndexElasticQuotaName, func(o client.Object) []string { return []string{o.GetName()} }).
		Build()
	r := NewReconciler(c, record.NewFakeRecorder(10), "queues")
	if _, err := r.Reconcile(ctx, reconcile.Request{NamespacedName: types.NamespacedName{Name: "team-a"}}); err != nil {
		t.Fatalf("Reconcile: %v", err)
	}
	var queues schedulingv1alpha1.QueueList
	if err := c.List(ctx, &queues); err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, q := range queues.Items {
		got = append(got, q.Namespace+"/"+q.Name)
	}
	if diff := cmp.Diff([]string{"queues/team-a"}, got); diff != "" {
		t.Errorf("Queues (-want +got):\n%s", diff)
	}
}
