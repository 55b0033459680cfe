package e2e

import (
	"context"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/testenv"
)

// TestJobRunsOnFakeNodes shows the local cluster is real: a Job creates
// pods, the scheduler binds them to kwok nodes, they run for the time their
// annotation says, and the Job completes.
func TestJobRunsOnFakeNodes(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	client := kubernetes.NewForConfigOrDie(localCluster.Config)
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "parallel", Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{cluster.PodRunTimeAnnotation: "2s"}},
				Spec: corev1.PodSpec{
					RestartPolicy: corev1.RestartPolicyNever,
					Containers: []corev1.Container{{
						Name: "work", Image: "busybox",
						Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1")}},
					}},
				},
			},
		},
	}
	if _, err := client.BatchV1().Jobs(job.Namespace).Create(ctx, job, metav1.CreateOptions{}); err != nil {
		t.Fatalf("creating job: %v", err)
	}
	start := time.Now()

	var sawRunning int
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		pods, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
		if err != nil {
			return err
		}
		running := 0
		for _, p := range pods.Items {
			if p.Spec.NodeName == "" {
				continue
			}
			if p.Status.Phase == corev1.PodRunning {
				running++
			}
		}
		sawRunning = max(sawRunning, running)
		got, err := client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		if got.Status.Succeeded != 2 {
			return fmt.Errorf("waiting for job %s to succeed: %d of 2 pods succeeded, %d running", job.Name, got.Status.Succeeded, running)
		}
		return nil
	})
	if sawRunning < 1 {
		t.Errorf("never saw a pod of the job Running on a node")
	}
	// Each pod runs for 2s, so the job cannot have finished sooner.
	if elapsed := time.Since(start); elapsed < 2*time.Second {
		t.Errorf("job finished after %v, before its pods' 2s run time", elapsed)
	}
	pods, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range pods.Items {
		if p.Spec.NodeName == "" || p.Status.Phase != corev1.PodSucceeded {
			t.Errorf("pod %s: node %q phase %s, want bound and Succeeded", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
	}
}
