// Command local-cluster starts koord-queue's local cluster (etcd,
// kube-apiserver, kube-controller-manager, kube-scheduler and kwok fake
// nodes) on loopback, runs a demonstration Job to completion, and stays up
// until Ctrl-C, when it stops everything it started.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/koord-queue/koord-queue/test/cluster"
)

func main() {
	dir := flag.String("dir", filepath.Join(os.TempDir(), "koord-queue-local"), "directory for the cluster's certificates, data and logs")
	nodes := flag.Int("nodes", 4, "number of kwok fake nodes")
	flag.Parse()
	if err := run(*dir, *nodes); err != nil {
		fmt.Fprintf(os.Stderr, "local-cluster: %v\n", err)
		os.Exit(1)
	}
}

func run(dir string, nodes int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := os.RemoveAll(dir); err != nil {
		return fmt.Errorf("cleaning %s: %w", dir, err)
	}
	fmt.Printf("Starting etcd, kube-apiserver, kube-controller-manager, kube-scheduler and kwok (%d nodes)...\n", nodes)
	c, err := cluster.Start(ctx, cluster.Options{Dir: dir, Nodes: nodes})
	if err != nil {
		return err
	}
	defer c.Stop(true)
	fmt.Printf("Cluster up.\n  export KUBECONFIG=%s\n  logs: %s\n\n", c.Kubeconfig, c.LogDir())

	if err := demoJob(ctx, kubernetes.NewForConfigOrDie(c.Config)); err != nil {
		return err
	}
	fmt.Println("\nThe cluster stays up for you to try things. Press Ctrl-C to stop it.")
	<-ctx.Done()
	fmt.Println("\nStopping.")
	return nil
}

// demoJob runs a two-pod Job whose pods run for 3 seconds on kwok nodes.
func demoJob(ctx context.Context, client kubernetes.Interface) error {
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "demo", Namespace: metav1.NamespaceDefault},
		Spec: batchv1.JobSpec{
			Parallelism: ptr.To[int32](2),
			Completions: ptr.To[int32](2),
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{cluster.PodRunTimeAnnotation: "3s"}},
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
		return fmt.Errorf("creating demo job: %w", err)
	}
	fmt.Println("Created Job default/demo (2 pods, 3s each). Watching it:")
	last := ""
	return wait.PollUntilContextTimeout(ctx, 500*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		pods, err := client.CoreV1().Pods(job.Namespace).List(ctx, metav1.ListOptions{LabelSelector: "job-name=" + job.Name})
		if err != nil {
			return false, err
		}
		line := ""
		for _, p := range pods.Items {
			line += fmt.Sprintf("  %s on %s: %s", p.Name, p.Spec.NodeName, p.Status.Phase)
		}
		got, err := client.BatchV1().Jobs(job.Namespace).Get(ctx, job.Name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		line = fmt.Sprintf("succeeded %d/2 |%s", got.Status.Succeeded, line)
		if line != last {
			fmt.Println(line)
			last = line
		}
		return got.Status.Succeeded == 2, nil
	})
}
