package install

import (
	"bufio"
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	authenticationv1 "k8s.io/api/authentication/v1"
	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/test/cluster"
	"github.com/koord-queue/koord-queue/test/helmchart"
	"github.com/koord-queue/koord-queue/test/seeds"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const replicas = 2

// values are the chart's values for the install: every extension and the
// webhook on, two replicas of each Deployment.
func values() map[string]any {
	v := helmchart.Everything()
	v["controller"] = map[string]any{"replicas": replicas}
	ext := v["extension"].(map[string]any)
	ext["koord-queue-controllers"] = map[string]any{"replicas": replicas}
	return v
}

// replica is one local process run from a Deployment's pod template.
type replica struct {
	deployment, name string
	proc             *cluster.Process
	// ports maps each of the chart's container ports to the port this
	// replica listens on.
	ports map[int32]int
	spec  corev1.PodSpec
	start func() (*cluster.Process, error)
}

// TestChartInstall is one sequence on one install: the install itself,
// the probes, the webhook through its Service, the seed's example, and the
// leader failover of each binary.
func TestChartInstall(t *testing.T) {
	ctx := context.Background()
	objs, err := helmchart.RenderIn(releaseNamespace, values())
	if err != nil {
		t.Fatal(err)
	}
	deployments := apply(t, objs)

	var all []*replica
	for _, d := range deployments {
		if got := ptr.Deref(d.Spec.Replicas, 1); got != replicas {
			t.Fatalf("Deployment %s rendered with %d replicas, want %d", d.Name, got, replicas)
		}
		kubeconfig := serviceAccountKubeconfig(t, d.Spec.Template.Spec.ServiceAccountName)
		for i := range replicas {
			r := newReplica(t, d, i, kubeconfig)
			all = append(all, r)
		}
	}
	byDeployment := map[string][]*replica{}
	for _, r := range all {
		byDeployment[r.deployment] = append(byDeployment[r.deployment], r)
	}

	t.Run("every replica passes the chart's probes", func(t *testing.T) {
		for _, r := range all {
			waitProbes(t, r)
		}
	})

	t.Run("a labelled Job submitted running is suspended by the webhook through the chart's Service", func(t *testing.T) {
		pointService(t, "koord-queue-controllers-webhook", byDeployment["koord-queue-controllers"])
		// The certificate rotation of the replicas writes the CA into the
		// chart's MutatingWebhookConfiguration.
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			cfg := &admissionregistrationv1.MutatingWebhookConfiguration{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: "koord-queue-controllers"}, cfg); err != nil {
				return err
			}
			for _, w := range cfg.Webhooks {
				if len(w.ClientConfig.CABundle) == 0 {
					return fmt.Errorf("webhook %s has no caBundle yet", w.Name)
				}
			}
			return nil
		})
		createQuota(t, "webhook", "100")
		// The webhook's failurePolicy is Ignore: until its certificate is
		// served, a Job goes through unmutated, so each try is a new Job
		// (each also seen by the controllers, which suspend it later).
		var try int
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			try++
			job := batchJob(fmt.Sprintf("submitted-running-%d", try), "webhook", "1")
			job.Spec.Suspend = nil
			if err := k8sClient.Create(ctx, job); err != nil {
				return err
			}
			// What the create returned is what the webhook made of it.
			if !ptr.Deref(job.Spec.Suspend, false) {
				return fmt.Errorf("Job %s created running: the webhook did not mutate it", job.Name)
			}
			return nil
		})
	})

	t.Run("the aggregated visibility API through the API server, on each replica, as a tenant and as an admin", func(t *testing.T) {
		testAggregatedAPI(t, byDeployment["koord-queue"])
	})

	t.Run("the seed's second Job waits with its reason and runs after the first", func(t *testing.T) {
		for _, file := range []string{"004-elastic-quota.yaml", "004-jobs.yaml"} {
			objs, err := seeds.Objects(file)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if err := k8sClient.Create(ctx, o); err != nil {
					t.Fatalf("creating %s %s: %v", o.GetKind(), o.GetName(), err)
				}
			}
		}
		waitAdmitted(t, all, metav1.NamespaceDefault, "my-job")
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			u := &schedulingv1alpha1.QueueUnit{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: "my-job-blocked"}, u); err != nil {
				return err
			}
			if phase := u.Status.Phase; (phase != "" && phase != schedulingv1alpha1.Enqueued) || u.Status.Message == "" {
				return fmt.Errorf("my-job-blocked phase %q message %q, want Enqueued with a reason", phase, u.Status.Message)
			}
			return nil
		})
		first, second := waitComplete(t, all, "my-job"), waitComplete(t, all, "my-job-blocked")
		if second.Status.StartTime == nil || second.Status.StartTime.Before(first.Status.CompletionTime) {
			t.Errorf("my-job-blocked started at %v, before my-job completed at %v", second.Status.StartTime, first.Status.CompletionTime)
		}
	})

	t.Run("the follower takes over when the leader is killed", func(t *testing.T) {
		rounds := failoverRounds(t)
		scraper := metricsScraperToken(t)
		createQuota(t, "failover", "100")
		for _, deployment := range []string{"koord-queue", "koord-queue-controllers"} {
			var times []time.Duration
			for round := range rounds {
				leader := waitLeader(t, byDeployment[deployment], deployment, scraper)
				name := fmt.Sprintf("failover-%s-%d", deployment, round)
				leader.proc.Kill()
				killed := time.Now()
				if err := k8sClient.Create(ctx, batchJob(name, "failover", "1")); err != nil {
					t.Fatal(err)
				}
				// koord-queue's next admission is a unit admitted; the
				// controllers' is a unit created for a new Job (which
				// the webhook suspended or the Job asked to be).
				testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
					if err := anyExited(all, leader); err != nil {
						return err
					}
					u := &schedulingv1alpha1.QueueUnit{}
					if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, u); err != nil {
						return fmt.Errorf("unit %s: %w%s", name, err, forbidden(all))
					}
					if deployment == "koord-queue" && !admitted(u) {
						return fmt.Errorf("unit %s phase %q (%s), not admitted yet%s", name, u.Status.Phase, u.Status.Message, forbidden(all))
					}
					return nil
				})
				took := time.Since(killed)
				times = append(times, took)
				t.Logf("%s: leader %s killed; next admission after %v", deployment, leader.name, took.Round(100*time.Millisecond))
				if leader.proc, err = leader.start(); err != nil {
					t.Fatal(err)
				}
			}
			sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
			t.Logf("%s: leader failover, median of %d: %v (all: %v)", deployment, rounds, times[rounds/2].Round(100*time.Millisecond), times)
		}
	})
}

// failoverRoundsEnv sets how many times each leader is killed. Each round
// waits out a Lease (about 17 s), so make test kills each leader once; 3
// logs a median.
const failoverRoundsEnv = "KOORD_QUEUE_E2E_FAILOVER_ROUNDS"

func failoverRounds(t *testing.T) int {
	v := os.Getenv(failoverRoundsEnv)
	if v == "" {
		return 1
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a whole number of at least 1", failoverRoundsEnv, v)
	}
	return n
}

// apply creates every rendered object, the Deployments with zero replicas
// (see the package doc), and returns the Deployments as rendered.
func apply(t *testing.T, objs []*unstructured.Unstructured) []*appsv1.Deployment {
	t.Helper()
	ctx := context.Background()
	if err := k8sClient.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: releaseNamespace}}); err != nil {
		t.Fatal(err)
	}
	// CRDs first, as helm installs them, so the rest's kinds are known.
	slices.SortStableFunc(objs, func(a, b *unstructured.Unstructured) int {
		return boolInt(b.GetKind() == "CustomResourceDefinition") - boolInt(a.GetKind() == "CustomResourceDefinition")
	})
	var deployments []*appsv1.Deployment
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			d := &appsv1.Deployment{}
			if err := runtime.DefaultUnstructuredConverter.FromUnstructured(o.Object, d); err != nil {
				t.Fatal(err)
			}
			deployments = append(deployments, d.DeepCopy())
			if err := unstructured.SetNestedField(o.Object, int64(0), "spec", "replicas"); err != nil {
				t.Fatal(err)
			}
		case "ServiceMonitor":
			continue // no Prometheus Operator here
		}
		if o.GetNamespace() == "" && o.GetKind() != "CustomResourceDefinition" && !clusterScoped(o.GetKind()) {
			o.SetNamespace(releaseNamespace)
		}
		testenv.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			err := k8sClient.Create(ctx, o.DeepCopy())
			if err != nil {
				return fmt.Errorf("creating %s %s: %w", o.GetKind(), o.GetName(), err)
			}
			return nil
		})
	}
	// A pod started before its CRDs are served would crash and be
	// restarted by the kubelet; a process here is not, so wait as helm
	// --wait would.
	for _, o := range objs {
		if o.GetKind() != "CustomResourceDefinition" {
			continue
		}
		testenv.Eventually(t, 30*time.Second, func(ctx context.Context) error {
			crd := &apiextensionsv1.CustomResourceDefinition{}
			if err := k8sClient.Get(ctx, client.ObjectKey{Name: o.GetName()}, crd); err != nil {
				return err
			}
			for _, c := range crd.Status.Conditions {
				if c.Type == apiextensionsv1.Established && c.Status == apiextensionsv1.ConditionTrue {
					return nil
				}
			}
			return fmt.Errorf("CRD %s not established", o.GetName())
		})
	}
	return deployments
}

func clusterScoped(kind string) bool {
	return slices.Contains([]string{"Namespace", "ClusterRole", "ClusterRoleBinding", "MutatingWebhookConfiguration", "ValidatingWebhookConfiguration",
		"ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding", "PriorityClass", "APIService"}, kind)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// serviceAccountKubeconfig is a kubeconfig with a token of the chart's
// ServiceAccount (TokenRequest), so the processes have exactly the chart's
// RBAC. It stands for the in-cluster config a pod would get from its
// projected token.
func serviceAccountKubeconfig(t *testing.T, serviceAccount string) string {
	t.Helper()
	tr, err := clientset.CoreV1().ServiceAccounts(releaseNamespace).CreateToken(context.Background(), serviceAccount,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s: %v", serviceAccount, err)
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters["local"] = &clientcmdapi.Cluster{Server: localCluster.Config.Host, CertificateAuthority: localCluster.Config.CAFile, CertificateAuthorityData: localCluster.Config.CAData}
	cfg.AuthInfos[serviceAccount] = &clientcmdapi.AuthInfo{Token: tr.Status.Token}
	cfg.Contexts["local"] = &clientcmdapi.Context{Cluster: "local", AuthInfo: serviceAccount}
	cfg.CurrentContext = "local"
	path := filepath.Join(t.TempDir(), serviceAccount+".kubeconfig")
	if err := clientcmd.WriteToFile(*cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// newReplica starts replica i of d's pod template as a local process: the
// image's entrypoint is the locally built binary, with the rendered args and
// env. Two changes stand for what a pod has and a process does not: the
// files the chart mounts (ConfigMaps, emptyDirs) are written under a
// directory of the replica's own and the args' mount path prefixes point
// there; each of the chart's (fixed) ports is replaced by a free port, so
// the two replicas do not collide on one host. KUBECONFIG stands for the
// in-cluster config.
func newReplica(t *testing.T, d *appsv1.Deployment, i int, kubeconfig string) *replica {
	t.Helper()
	spec := d.Spec.Template.Spec
	if len(spec.Containers) != 1 {
		t.Fatalf("Deployment %s has %d containers, want 1", d.Name, len(spec.Containers))
	}
	container := spec.Containers[0]
	binary := binaries[container.Name]
	if binary == "" || len(container.Command) > 0 {
		t.Fatalf("Deployment %s: container %s (command %v) is not one of the images' entrypoints", d.Name, container.Name, container.Command)
	}
	r := &replica{deployment: d.Name, name: fmt.Sprintf("%s-%d", d.Name, i), ports: map[int32]int{}, spec: spec}
	root := filepath.Join(localCluster.Dir, "pods", r.name)
	args := slices.Clone(container.Args)
	for _, m := range container.VolumeMounts {
		dir := filepath.Join(root, m.MountPath)
		if err := os.MkdirAll(dir, 0o700); err != nil {
			t.Fatal(err)
		}
		writeVolume(t, spec, m.Name, dir)
		mounted := false
		for j, a := range args {
			if strings.Contains(a, m.MountPath) {
				args[j], mounted = strings.ReplaceAll(a, m.MountPath, dir), true
			}
		}
		// The webhook's certificate directory is the flag's default, so
		// the chart names it only as the mount path.
		if !mounted && m.MountPath == "/tmp/k8s-webhook-server/serving-certs" {
			args = append(args, "--webhook-cert-dir="+dir)
		}
	}
	free, err := cluster.FreePorts(len(container.Ports))
	if err != nil {
		t.Fatal(err)
	}
	for j, p := range container.Ports {
		r.ports[p.ContainerPort] = free[j]
		old := strconv.Itoa(int(p.ContainerPort))
		for k, a := range args {
			if strings.HasSuffix(a, ":"+old) || strings.HasSuffix(a, "="+old) {
				args[k] = strings.TrimSuffix(a, old) + strconv.Itoa(free[j])
			}
		}
	}
	env := []string{"KUBECONFIG=" + kubeconfig}
	for _, e := range container.Env {
		env = append(env, e.Name+"="+envValue(t, r.name, container, e))
	}
	r.start = func() (*cluster.Process, error) {
		starts[r.name]++
		return localCluster.StartProcessEnv(fmt.Sprintf("%s-%d", r.name, starts[r.name]), env, binary, args...)
	}
	if r.proc, err = r.start(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%s: %s %s", r.name, filepath.Base(binary), strings.Join(args, " "))
	return r
}

// starts counts each replica's starts, so each process logs to its own file.
var starts = map[string]int{}

// writeVolume writes the volume's files into dir as the kubelet would
// mount them: a ConfigMap's or Secret's keys as files; an emptyDir empty.
func writeVolume(t *testing.T, spec corev1.PodSpec, name, dir string) {
	t.Helper()
	ctx := context.Background()
	for _, v := range spec.Volumes {
		if v.Name != name {
			continue
		}
		files := map[string][]byte{}
		switch {
		case v.ConfigMap != nil:
			cm, err := clientset.CoreV1().ConfigMaps(releaseNamespace).Get(ctx, v.ConfigMap.Name, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", name, err)
			}
			for k, s := range cm.Data {
				files[k] = []byte(s)
			}
		case v.Secret != nil:
			s, err := clientset.CoreV1().Secrets(releaseNamespace).Get(ctx, v.Secret.SecretName, metav1.GetOptions{})
			if err != nil {
				t.Fatalf("volume %s: %v", name, err)
			}
			files = s.Data
		case v.EmptyDir != nil:
		default:
			t.Fatalf("volume %s: only ConfigMap, Secret and emptyDir volumes are provided here", name)
		}
		for k, data := range files {
			if err := os.WriteFile(filepath.Join(dir, k), data, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		return
	}
	t.Fatalf("no volume %s", name)
}

// envValue resolves an env var as the kubelet would for the pod named pod.
func envValue(t *testing.T, pod string, c corev1.Container, e corev1.EnvVar) string {
	t.Helper()
	switch {
	case e.ValueFrom == nil:
		return e.Value
	case e.ValueFrom.FieldRef != nil:
		switch e.ValueFrom.FieldRef.FieldPath {
		case "metadata.name":
			return pod
		case "metadata.namespace":
			return releaseNamespace
		}
	case e.ValueFrom.ResourceFieldRef != nil:
		ref := e.ValueFrom.ResourceFieldRef
		var q resource.Quantity
		switch ref.Resource {
		case "limits.memory":
			q = c.Resources.Limits[corev1.ResourceMemory]
		case "limits.cpu":
			q = c.Resources.Limits[corev1.ResourceCPU]
		case "requests.memory":
			q = c.Resources.Requests[corev1.ResourceMemory]
		case "requests.cpu":
			q = c.Resources.Requests[corev1.ResourceCPU]
		default:
			t.Fatalf("env %s: resource %s not resolved here", e.Name, ref.Resource)
		}
		divisor := ref.Divisor
		if divisor.IsZero() {
			divisor = resource.MustParse("1")
		}
		// The kubelet rounds up to whole divisors.
		return strconv.FormatInt((q.MilliValue()+divisor.MilliValue()-1)/divisor.MilliValue(), 10)
	}
	t.Fatalf("env %s: %+v not resolved here", e.Name, e.ValueFrom)
	return ""
}

// waitProbes polls the rendered liveness and readiness probes of r.
func waitProbes(t *testing.T, r *replica) {
	t.Helper()
	c := r.spec.Containers[0]
	for _, probe := range []*corev1.Probe{c.LivenessProbe, c.ReadinessProbe} {
		if probe == nil || probe.HTTPGet == nil {
			t.Fatalf("%s: the chart renders no HTTP probe", r.name)
		}
		port := namedPort(t, c, probe.HTTPGet.Port.String())
		url := fmt.Sprintf("http://%s%s", cluster.Loopback(r.ports[port]), probe.HTTPGet.Path)
		testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
			if err := r.proc.Err(); err != nil {
				return err
			}
			resp, err := http.Get(url)
			if err != nil {
				return fmt.Errorf("%s: %w%s", r.name, err, forbidden([]*replica{r}))
			}
			resp.Body.Close()
			if resp.StatusCode != http.StatusOK {
				return fmt.Errorf("%s: GET %s: %s%s", r.name, url, resp.Status, forbidden([]*replica{r}))
			}
			return nil
		})
	}
}

func namedPort(t *testing.T, c corev1.Container, name string) int32 {
	t.Helper()
	for _, p := range c.Ports {
		if p.Name == name || strconv.Itoa(int(p.ContainerPort)) == name {
			return p.ContainerPort
		}
	}
	t.Fatalf("container %s has no port %s", c.Name, name)
	return 0
}

// pointService gives the chart's Service service an EndpointSlice per
// replica at this host's address and the replica's port of the Service's
// target port: the API server, with --enable-aggregator-routing, resolves
// the Service to these itself (for webhooks and APIServices). The API
// refuses loopback addresses in an EndpointSlice, so it is the host's first
// non-loopback IPv4 address (the processes listen on every address, as the
// chart's ":port" flags say). A slice carries one port for all its
// endpoints, hence one per replica. It returns the slices.
func pointService(t *testing.T, service string, rs []*replica) []*discoveryv1.EndpointSlice {
	t.Helper()
	host := hostAddress(t)
	svc := &corev1.Service{}
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: releaseNamespace, Name: service}, svc); err != nil {
		t.Fatal(err)
	}
	target := svc.Spec.Ports[0].TargetPort.String()
	var slices []*discoveryv1.EndpointSlice
	for _, r := range rs {
		port := int32(r.ports[namedPort(t, r.spec.Containers[0], target)])
		slice := &discoveryv1.EndpointSlice{
			ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: service + "-" + r.name,
				Labels: map[string]string{discoveryv1.LabelServiceName: svc.Name}},
			AddressType: discoveryv1.AddressTypeIPv4,
			Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{host}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
			Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(svc.Spec.Ports[0].Name), Port: &port, Protocol: ptr.To(corev1.ProtocolTCP)}},
		}
		if err := k8sClient.Create(context.Background(), slice); err != nil {
			t.Fatal(err)
		}
		slices = append(slices, slice)
	}
	return slices
}

func createQuota(t *testing.T, name, cpu string) {
	t.Helper()
	q := &unstructured.Unstructured{}
	q.SetAPIVersion("scheduling.sigs.k8s.io/v1alpha1")
	q.SetKind("ElasticQuota")
	q.SetNamespace(metav1.NamespaceDefault)
	q.SetName(name)
	q.SetLabels(map[string]string{"quota.scheduling.koordinator.sh/parent": "", "quota.scheduling.koordinator.sh/is-parent": "false"})
	q.Object["spec"] = map[string]any{"max": map[string]any{"cpu": cpu, "memory": "1Ti"}, "min": map[string]any{"cpu": cpu, "memory": "1Ti"}}
	if err := k8sClient.Create(context.Background(), q); err != nil {
		t.Fatal(err)
	}
}

func batchJob(name, quota, cpu string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: metav1.NamespaceDefault, Name: name,
			Labels: map[string]string{"quota.scheduling.koordinator.sh/name": quota}},
		Spec: batchv1.JobSpec{
			Suspend: ptr.To(true),
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
				RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "main", Image: "busybox",
					Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse(cpu)}}}},
			}},
		},
	}
}

// admitted: the unit holds its quota (koord-queue has admitted it).
func admitted(u *schedulingv1alpha1.QueueUnit) bool {
	return slices.Contains([]schedulingv1alpha1.QueueUnitPhase{schedulingv1alpha1.Dequeued, schedulingv1alpha1.Running, schedulingv1alpha1.Succeed}, u.Status.Phase)
}

func waitAdmitted(t *testing.T, all []*replica, ns, name string) {
	t.Helper()
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		u := &schedulingv1alpha1.QueueUnit{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, u); err != nil {
			return fmt.Errorf("unit %s: %w%s", name, err, forbidden(all))
		}
		if !admitted(u) {
			return fmt.Errorf("unit %s phase %q (%s)%s", name, u.Status.Phase, u.Status.Message, forbidden(all))
		}
		return nil
	})
}

func waitComplete(t *testing.T, all []*replica, name string) *batchv1.Job {
	t.Helper()
	job := &batchv1.Job{}
	testenv.Eventually(t, 2*time.Minute, func(ctx context.Context) error {
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: metav1.NamespaceDefault, Name: name}, job); err != nil {
			return err
		}
		if job.Status.CompletionTime == nil {
			return fmt.Errorf("Job %s not complete (suspend %v, active %d)%s", name, ptr.Deref(job.Spec.Suspend, false), job.Status.Active, forbidden(all))
		}
		return nil
	})
	return job
}

// waitLeader is the replica of deployment whose /metrics says it leads,
// once the chart's Lease names a holder.
func waitLeader(t *testing.T, rs []*replica, lease, token string) *replica {
	t.Helper()
	// The chart serves /metrics over HTTPS with a self-signed certificate,
	// as its ServiceMonitor expects, to callers allowed to get /metrics.
	httpClient := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}}
	var leader *replica
	testenv.Eventually(t, time.Minute, func(ctx context.Context) error {
		l := &coordinationv1.Lease{}
		if err := k8sClient.Get(ctx, client.ObjectKey{Namespace: releaseNamespace, Name: lease}, l); err != nil {
			return fmt.Errorf("the chart's Lease %s: %w", lease, err)
		}
		leader = nil
		for _, r := range rs {
			c := r.spec.Containers[0]
			url := fmt.Sprintf("https://%s/metrics", cluster.Loopback(r.ports[namedPort(t, c, "metrics")]))
			req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
			if err != nil {
				return err
			}
			req.Header.Set("Authorization", "Bearer "+token)
			resp, err := httpClient.Do(req)
			if err != nil {
				return err
			}
			if resp.StatusCode != http.StatusOK {
				resp.Body.Close()
				return fmt.Errorf("GET %s: %s", url, resp.Status)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				return err
			}
			if regexp.MustCompile(`(?m)^leader_election_master_status\{name="` + lease + `"\} 1$`).Match(body) {
				leader = r
			}
		}
		if leader == nil {
			return fmt.Errorf("no replica of %s leads yet (Lease holder %q)", lease, ptr.Deref(l.Spec.HolderIdentity, ""))
		}
		return nil
	})
	return leader
}

// metricsScraperToken is a token of a ServiceAccount bound to the chart's
// metrics-reader ClusterRole, as a Prometheus would be.
func metricsScraperToken(t *testing.T) string {
	t.Helper()
	ctx := context.Background()
	sa := &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Namespace: releaseNamespace, Name: "prometheus"}}
	binding := &rbacv1.ClusterRoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "prometheus-reads-koord-queue-metrics"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "koord-queue-metrics-reader"},
		Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: sa.Namespace, Name: sa.Name}},
	}
	for _, o := range []client.Object{sa, binding} {
		if err := k8sClient.Create(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	tr, err := clientset.CoreV1().ServiceAccounts(sa.Namespace).CreateToken(ctx, sa.Name,
		&authenticationv1.TokenRequest{Spec: authenticationv1.TokenRequestSpec{ExpirationSeconds: ptr.To[int64](3600)}}, metav1.CreateOptions{})
	if err != nil {
		t.Fatalf("TokenRequest for ServiceAccount %s: %v", sa.Name, err)
	}
	return tr.Status.Token
}

// anyExited fails a wait at once when a replica other than the killed one
// has exited.
func anyExited(all []*replica, killed *replica) error {
	for _, r := range all {
		if r != killed {
			if err := r.proc.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// forbidden names the API requests the replicas were refused, from their
// logs, so that a rule missing from the chart's RBAC reads as such.
func forbidden(rs []*replica) string {
	var lines []string
	for _, r := range rs {
		for n := 1; n <= starts[r.name]; n++ {
			f, err := os.Open(filepath.Join(localCluster.LogDir(), fmt.Sprintf("%s-%d.log", r.name, n)))
			if err != nil {
				continue
			}
			s := bufio.NewScanner(f)
			s.Buffer(make([]byte, 1<<20), 1<<20)
			for s.Scan() {
				if strings.Contains(s.Text(), "forbidden") && len(lines) < 5 {
					lines = append(lines, r.name+": "+s.Text())
				}
			}
			f.Close()
		}
	}
	if len(lines) == 0 {
		return ""
	}
	return "; refused by the chart's RBAC:\n" + strings.Join(lines, "\n")
}

// hostAddress is the host's first non-loopback IPv4 address.
func hostAddress(t *testing.T) string {
	t.Helper()
	addrs, err := net.InterfaceAddrs()
	if err != nil {
		t.Fatal(err)
	}
	for _, a := range addrs {
		if ipNet, ok := a.(*net.IPNet); ok && !ipNet.IP.IsLoopback() && ipNet.IP.To4() != nil {
			return ipNet.IP.String()
		}
	}
	t.Fatal("no non-loopback IPv4 address for the webhook's EndpointSlice")
	return ""
}
