// Package chart tests the Helm chart with the Helm v3 SDK (no helm binary):
// it lints, renders with the default values and with every extension on,
// and installs into a real API server.
package chart

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/open-policy-agent/cert-controller/pkg/rotator"
	"helm.sh/helm/v3/pkg/action"
	"helm.sh/helm/v3/pkg/chart"
	"helm.sh/helm/v3/pkg/lint"
	"helm.sh/helm/v3/pkg/lint/support"
	appsv1 "k8s.io/api/apps/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/cli-runtime/pkg/genericclioptions"
	"k8s.io/client-go/rest"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"

	"github.com/koord-queue/koord-queue/pkg/servingcert"
	"github.com/koord-queue/koord-queue/test/helmchart"
	"github.com/koord-queue/koord-queue/test/testenv"
)

const namespace = "koord-queue"

var (
	env      *testenv.Env
	chartDir = helmchart.Dir
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	// An API server without koord-queue's CRDs (the chart installs them
	// itself), with the job frameworks' CRDs that its admission policies
	// are tried against.
	frameworkCRDs, err := testenv.FrameworkCRDDir()
	if err != nil {
		fmt.Fprintf(os.Stderr, "chart: %v\n", err)
		return 1
	}
	defer os.RemoveAll(frameworkCRDs)
	return testenv.MainWithCRDs(m, func(e *testenv.Env) { env = e }, []string{frameworkCRDs})
}

// everything turns on every extension, the webhook and the ElasticQuota CRD.
func everything() map[string]any { return helmchart.Everything() }

func loadChart(t *testing.T) *chart.Chart {
	t.Helper()
	c, err := helmchart.Load()
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestLint(t *testing.T) {
	for name, values := range map[string]map[string]any{"default values": nil, "every extension on": everything()} {
		t.Run(name, func(t *testing.T) {
			result := lint.All(chartDir, values, namespace, false)
			for _, msg := range result.Messages {
				if msg.Severity >= support.WarningSev {
					t.Errorf("lint: %s", msg)
				}
			}
		})
	}
}

// render renders the chart as `helm template` does and decodes every object.
func render(t *testing.T, values map[string]any) ([]*unstructured.Unstructured, error) {
	t.Helper()
	return helmchart.Render(values)
}

// renderOrRefuse renders the chart with values; with wantError set, the
// render must fail with an error containing it, and it returns nil.
func renderOrRefuse(t *testing.T, values map[string]any, wantError string) []*unstructured.Unstructured {
	t.Helper()
	objs, err := render(t, values)
	if wantError != "" {
		if err == nil || !strings.Contains(err.Error(), wantError) {
			t.Fatalf("render error %v, want one containing %q", err, wantError)
		}
		return nil
	}
	if err != nil {
		t.Fatal(err)
	}
	return objs
}

func find(objs []*unstructured.Unstructured, kind, name string) *unstructured.Unstructured {
	return helmchart.Find(objs, kind, name)
}

func containerArgs(t *testing.T, objs []*unstructured.Unstructured, deployment string) []string {
	t.Helper()
	d := find(objs, "Deployment", deployment)
	if d == nil {
		t.Fatalf("no Deployment %s", deployment)
	}
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
	return args
}

func ruleResources(t *testing.T, objs []*unstructured.Unstructured, kind, name string) []string {
	t.Helper()
	role := find(objs, kind, name)
	if role == nil {
		t.Fatalf("no %s %s", kind, name)
	}
	var out []string
	rules, _, _ := unstructured.NestedSlice(role.Object, "rules")
	for _, r := range rules {
		groups, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "apiGroups")
		resources, _, _ := unstructured.NestedStringSlice(r.(map[string]any), "resources")
		for _, g := range groups {
			for _, res := range resources {
				out = append(out, g+"/"+res)
			}
		}
	}
	return out
}

func TestRender(t *testing.T) {
	t.Run("default values: the Job extension only, least privilege", func(t *testing.T) {
		objs, err := render(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		if args := containerArgs(t, objs, "koord-queue-controllers"); !slices.Contains(args, "--enabled-extensions=job") {
			t.Errorf("controllers args %v, want --enabled-extensions=job", args)
		}
		if args := containerArgs(t, objs, "koord-queue"); !slices.Contains(args, "--visibility-bind-address=:8090") || !slices.Contains(args, "--config=/etc/koord-queue/config.yaml") {
			t.Errorf("koord-queue args %v, want the visibility server and the config file", args)
		}
		rules := ruleResources(t, objs, "ClusterRole", "koord-queue-controllers")
		if !slices.Contains(rules, "batch/jobs") || slices.Contains(rules, "kubeflow.org/tfjobs") || slices.Contains(rules, "/secrets") {
			t.Errorf("controllers' rules %v: want batch jobs, and no TFJobs or Secrets while those are off", rules)
		}
		// TokenReviews and SubjectAccessReviews: the visibility API checks
		// who asks.
		for _, want := range []string{"scheduling.x-k8s.io/queueunits", "scheduling.sigs.k8s.io/elasticquotas", "authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews"} {
			if !slices.Contains(ruleResources(t, objs, "ClusterRole", "koord-queue"), want) {
				t.Errorf("koord-queue's rules lack %s", want)
			}
		}
		for _, kind := range []string{"ServiceMonitor", "ValidatingAdmissionPolicy", "ValidatingAdmissionPolicyBinding"} {
			for _, o := range objs {
				// The admission gate's policy is on with the pod webhook.
				if o.GetKind() == kind && o.GetName() != "koord-queue-admission-gate" {
					t.Errorf("%s %s rendered while it is off", kind, o.GetName())
				}
			}
		}
		// The webhook is on by default: jobs submitted running are
		// suspended as they are created, and pods of queued jobs their
		// admission does not cover are created gated.
		if webhook := find(objs, "MutatingWebhookConfiguration", "koord-queue-controllers"); webhook == nil {
			t.Error("no MutatingWebhookConfiguration by default")
		} else if hooks, _, _ := unstructured.NestedSlice(webhook.Object, "webhooks"); len(hooks) != 2 {
			t.Errorf("%d webhooks, want one for the Job extension and one for pods", len(hooks))
		} else {
			for _, hook := range hooks {
				if policy, _, _ := unstructured.NestedString(hook.(map[string]any), "failurePolicy"); policy != "Ignore" {
					t.Errorf("failurePolicy %q, want Ignore so that a webhook outage never blocks job or pod creation", policy)
				}
			}
			path, _, _ := unstructured.NestedString(hooks[1].(map[string]any), "clientConfig", "service", "path")
			condition, _, _ := unstructured.NestedSlice(hooks[1].(map[string]any), "matchConditions")
			if path != "/mutate--v1-pod" || len(condition) != 1 || !strings.Contains(fmt.Sprint(condition), "['batch', 'Job']") {
				t.Errorf("pod webhook at %q, matching %v: want /mutate--v1-pod for bare pods and the Job extension's", path, condition)
			}
		}
		if find(objs, "ValidatingAdmissionPolicy", "koord-queue-admission-gate") == nil {
			t.Error("no policy keeps koord-queue's scheduling gate to koord-queue-controllers")
		}
		if args := containerArgs(t, objs, "koord-queue-controllers"); !slices.Contains(args, "--enable-webhook=true") || !slices.Contains(args, "--leave-jobs-submitted-running=false") {
			t.Errorf("controllers args %v, want the webhook on and jobs submitted running queued", args)
		}
		if find(objs, "Service", "koord-queue-visibility") == nil {
			t.Errorf("no Service koord-queue-visibility")
		}
		if args := containerArgs(t, objs, "koord-queue"); slices.Contains(args, "--visibility-insecure-allow-unauthenticated") {
			t.Errorf("koord-queue args %v: the visibility API open to anyone by default", args)
		}
		if find(objs, "CustomResourceDefinition", "elasticquotas.scheduling.sigs.k8s.io") != nil {
			t.Errorf("the ElasticQuota CRD is rendered while installElasticQuotaCRD is false")
		}
	})

	t.Run("unit priorities: Kubernetes' highest user-definable and no system class by default; both from their values", func(t *testing.T) {
		controllers := func(values map[string]any) map[string]any {
			return map[string]any{"extension": map[string]any{"koord-queue-controllers": values}}
		}
		for name, tc := range map[string]struct {
			values             map[string]any
			wantArgs, wantNone []string
			wantError          string
		}{
			"by default": {
				wantArgs: []string{"--max-unit-priority=1000000000"},
				wantNone: []string{"--allowed-system-priority-classes"},
			},
			"a lower ceiling and a system class allowed": {
				values:   controllers(map[string]any{"maxUnitPriority": 5000, "allowedSystemPriorityClasses": []any{"system-cluster-critical", "system-node-critical"}}),
				wantArgs: []string{"--max-unit-priority=5000", "--allowed-system-priority-classes=system-cluster-critical,system-node-critical"},
			},
			"a class that is no system class is refused": {
				values:    controllers(map[string]any{"allowedSystemPriorityClasses": []any{"high"}}),
				wantError: "allowedSystemPriorityClasses",
			},
			"a ceiling past 32 bits is refused": {
				values:    controllers(map[string]any{"maxUnitPriority": 3000000000}),
				wantError: "maxUnitPriority",
			},
		} {
			objs, err := render(t, tc.values)
			if tc.wantError != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantError) {
					t.Errorf("%s: render error %v, want one naming %s", name, err, tc.wantError)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			args := containerArgs(t, objs, "koord-queue-controllers")
			for _, want := range tc.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("%s: controllers args %v, want %s", name, args, want)
				}
			}
			for _, arg := range args {
				for _, none := range tc.wantNone {
					if strings.HasPrefix(arg, none) {
						t.Errorf("%s: controllers args %v, want no %s", name, args, none)
					}
				}
			}
		}
	})

	t.Run("maxDeclaredExecutionTime: 7 days by default, else its value, a duration", func(t *testing.T) {
		for name, tc := range map[string]struct {
			value     any
			wantArg   string
			wantError bool
		}{
			"by default":     {wantArg: "--max-declared-execution-time=168h"},
			"a day":          {value: "24h", wantArg: "--max-declared-execution-time=24h"},
			"a bare number":  {value: 3600, wantError: true},
			"not a duration": {value: "a week", wantError: true},
		} {
			var values map[string]any
			if tc.value != nil {
				values = map[string]any{"extension": map[string]any{"koord-queue-controllers": map[string]any{"maxDeclaredExecutionTime": tc.value}}}
			}
			objs, err := render(t, values)
			if tc.wantError {
				if err == nil || !strings.Contains(err.Error(), "maxDeclaredExecutionTime") {
					t.Errorf("%s: render error %v, want one naming maxDeclaredExecutionTime", name, err)
				}
				continue
			}
			if err != nil {
				t.Fatalf("%s: %v", name, err)
			}
			if args := containerArgs(t, objs, "koord-queue-controllers"); !slices.Contains(args, tc.wantArg) {
				t.Errorf("%s: controllers args %v, want %s", name, args, tc.wantArg)
			}
		}
	})

	t.Run("computeTreeCapacity: off by default, on with its value; ElasticQuotaProfiles readable", func(t *testing.T) {
		for value, want := range map[any]string{nil: "--compute-tree-capacity=false", true: "--compute-tree-capacity=true"} {
			var values map[string]any
			if value != nil {
				values = map[string]any{"computeTreeCapacity": value}
			}
			objs, err := render(t, values)
			if err != nil {
				t.Fatal(err)
			}
			if args := containerArgs(t, objs, "koord-queue"); !slices.Contains(args, want) {
				t.Errorf("computeTreeCapacity %v: koord-queue args %v, want %s", value, args, want)
			}
			if rules := ruleResources(t, objs, "ClusterRole", "koord-queue"); !slices.Contains(rules, "quota.koordinator.sh/elasticquotaprofiles") {
				t.Errorf("koord-queue's rules %v lack quota.koordinator.sh/elasticquotaprofiles", rules)
			}
		}
	})

	t.Run("visibility.insecureAllowUnauthenticated opens the visibility API", func(t *testing.T) {
		objs, err := render(t, map[string]any{"visibility": map[string]any{"insecureAllowUnauthenticated": true}})
		if err != nil {
			t.Fatal(err)
		}
		if args := containerArgs(t, objs, "koord-queue"); !slices.Contains(args, "--visibility-insecure-allow-unauthenticated") {
			t.Errorf("koord-queue args %v, want --visibility-insecure-allow-unauthenticated", args)
		}
	})

	t.Run("the aggregated visibility API by default: APIService, Service, certificate Secret and RBAC; off with its value", func(t *testing.T) {
		objs, err := render(t, nil)
		if err != nil {
			t.Fatal(err)
		}
		args := containerArgs(t, objs, "koord-queue")
		for _, want := range []string{"--aggregated-api-bind-address=:8443", "--aggregated-api-secret-namespace=" + namespace} {
			if !slices.Contains(args, want) {
				t.Errorf("koord-queue args %v, want %s", args, want)
			}
		}
		apiService := find(objs, "APIService", "v1alpha1.visibility.koord-queue.x-k8s.io")
		if apiService == nil {
			t.Fatal("no APIService v1alpha1.visibility.koord-queue.x-k8s.io")
		}
		spec, _, _ := unstructured.NestedMap(apiService.Object, "spec")
		service, _, _ := unstructured.NestedMap(spec, "service")
		if spec["group"] != "visibility.koord-queue.x-k8s.io" || spec["version"] != "v1alpha1" || service["name"] != "koord-queue-visibility-api" ||
			service["namespace"] != namespace || fmt.Sprint(service["port"]) != "443" {
			t.Errorf("APIService spec %v", spec)
		}
		if _, ok := spec["insecureSkipTLSVerify"]; ok {
			t.Errorf("APIService spec %v: insecureSkipTLSVerify, want the caBundle koord-queue writes", spec)
		}
		svc := find(objs, "Service", "koord-queue-visibility-api")
		if svc == nil {
			t.Fatal("no Service koord-queue-visibility-api")
		}
		ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
		if p := ports[0].(map[string]any); fmt.Sprint(p["port"]) != "443" || p["targetPort"] != "visibility-api" {
			t.Errorf("Service port %v, want 443 to the container's visibility-api port", p)
		}
		d := find(objs, "Deployment", "koord-queue")
		containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
		containerPorts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "ports")
		if !slices.ContainsFunc(containerPorts, func(p any) bool {
			return p.(map[string]any)["name"] == "visibility-api" && fmt.Sprint(p.(map[string]any)["containerPort"]) == "8443"
		}) {
			t.Errorf("koord-queue's container ports %v lack visibility-api 8443", containerPorts)
		}
		if find(objs, "Secret", "koord-queue-visibility-api-cert") == nil {
			t.Error("no certificate Secret koord-queue-visibility-api-cert")
		}
		if rules := ruleResources(t, objs, "ClusterRole", "koord-queue-visibility-api"); !slices.Contains(rules, "apiregistration.k8s.io/apiservices") {
			t.Errorf("rules %v: the rotator cannot write the APIService's caBundle", rules)
		}
		if rules := ruleResources(t, objs, "Role", "koord-queue-visibility-api"); !slices.Contains(rules, "/secrets") {
			t.Errorf("rules %v: the certificate Secret is not granted", rules)
		}
		for _, want := range []string{"authentication.k8s.io/tokenreviews", "authorization.k8s.io/subjectaccessreviews"} {
			if !slices.Contains(ruleResources(t, objs, "ClusterRole", "koord-queue"), want) {
				t.Errorf("koord-queue's rules lack %s", want)
			}
		}
		reader := find(objs, "RoleBinding", "koord-queue-koord-queue-auth-reader")
		if reader == nil {
			t.Fatal("no RoleBinding to extension-apiserver-authentication-reader")
		}
		role, _, _ := unstructured.NestedString(reader.Object, "roleRef", "name")
		if reader.GetNamespace() != "kube-system" || role != "extension-apiserver-authentication-reader" {
			t.Errorf("RoleBinding %s/%s to %s, want kube-system's extension-apiserver-authentication-reader", reader.GetNamespace(), reader.GetName(), role)
		}
		if rules := ruleResources(t, objs, "ClusterRole", "koord-queue-visibility-reader"); !slices.Contains(rules, "visibility.koord-queue.x-k8s.io/queues/queueunits") {
			t.Errorf("the readers' rules %v lack queues/queueunits", rules)
		}
		if find(objs, "ClusterRoleBinding", "koord-queue-visibility-reader") == nil {
			t.Error("no ClusterRoleBinding of the readers' role to authenticated users")
		}

		objs, err = render(t, map[string]any{"visibility": map[string]any{"aggregatedAPI": map[string]any{"enable": false}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, kind := range []string{"APIService", "Secret", "Service"} {
			for _, o := range objs {
				if o.GetKind() == kind && (kind == "APIService" || strings.Contains(o.GetName(), "visibility-api")) {
					t.Errorf("%s %s rendered with the aggregated API off", kind, o.GetName())
				}
			}
		}
		if args := containerArgs(t, objs, "koord-queue"); slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, "--aggregated-api") }) {
			t.Errorf("koord-queue args %v with the aggregated API off", args)
		}
	})

	t.Run("metrics over HTTPS by default, plain HTTP with metrics.secure false", func(t *testing.T) {
		objs, err := render(t, map[string]any{"metrics": map[string]any{"serviceMonitor": map[string]any{"enabled": true}}})
		if err != nil {
			t.Fatal(err)
		}
		for _, name := range []string{"koord-queue", "koord-queue-controllers"} {
			if args := containerArgs(t, objs, name); !slices.Contains(args, "--metrics-secure=true") {
				t.Errorf("%s args %v, want --metrics-secure=true", name, args)
			}
			monitor := find(objs, "ServiceMonitor", name)
			if monitor == nil {
				t.Fatalf("no ServiceMonitor %s", name)
			}
			endpoints, _, _ := unstructured.NestedSlice(monitor.Object, "spec", "endpoints")
			scheme, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "scheme")
			token, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "bearerTokenFile")
			if scheme != "https" || token == "" {
				t.Errorf("ServiceMonitor %s endpoint %v, want https with a bearer token", name, endpoints[0])
			}
		}
		// TokenReviews and SubjectAccessReviews: the metrics filter checks who scrapes.
		for _, role := range []string{"koord-queue", "koord-queue-controllers"} {
			rules := ruleResources(t, objs, "ClusterRole", role)
			if !slices.Contains(rules, "authentication.k8s.io/tokenreviews") || !slices.Contains(rules, "authorization.k8s.io/subjectaccessreviews") {
				t.Errorf("%s's rules %v lack tokenreviews or subjectaccessreviews", role, rules)
			}
		}
		if find(objs, "ClusterRole", "koord-queue-metrics-reader") == nil {
			t.Error("no ClusterRole koord-queue-metrics-reader")
		}

		objs, err = render(t, map[string]any{"metrics": map[string]any{"secure": false, "serviceMonitor": map[string]any{"enabled": true}}})
		if err != nil {
			t.Fatal(err)
		}
		if args := containerArgs(t, objs, "koord-queue"); !slices.Contains(args, "--metrics-secure=false") {
			t.Errorf("koord-queue args %v, want --metrics-secure=false", args)
		}
		endpoints, _, _ := unstructured.NestedSlice(find(objs, "ServiceMonitor", "koord-queue").Object, "spec", "endpoints")
		if scheme, _, _ := unstructured.NestedString(endpoints[0].(map[string]any), "scheme"); scheme != "" {
			t.Errorf("ServiceMonitor scheme %q with metrics.secure false, want plain HTTP", scheme)
		}
	})

	t.Run("every extension on", func(t *testing.T) {
		objs, err := render(t, everything())
		if err != nil {
			t.Fatal(err)
		}
		args := containerArgs(t, objs, "koord-queue-controllers")
		if !slices.Contains(args, "--enabled-extensions=job,tfjob,pytorchjob,mpijob,workflow,rayjob,raycluster,sparkapplication") || !slices.Contains(args, "--enable-webhook=true") {
			t.Errorf("controllers args %v", args)
		}
		rules := ruleResources(t, objs, "ClusterRole", "koord-queue-controllers")
		for _, want := range []string{"batch/jobs", "kubeflow.org/tfjobs", "kubeflow.org/pytorchjobs", "kubeflow.org/mpijobs", "argoproj.io/workflows", "ray.io/rayjobs", "ray.io/rayclusters", "sparkoperator.k8s.io/sparkapplications", "admissionregistration.k8s.io/mutatingwebhookconfigurations"} {
			if !slices.Contains(rules, want) {
				t.Errorf("controllers' ClusterRole lacks %s", want)
			}
		}
		if !slices.Contains(ruleResources(t, objs, "Role", "koord-queue-controllers"), "/secrets") {
			t.Errorf("the webhook's Secret is not granted in the release namespace")
		}
		webhook := find(objs, "MutatingWebhookConfiguration", "koord-queue-controllers")
		if webhook == nil {
			t.Fatal("no MutatingWebhookConfiguration")
		}
		hooks, _, _ := unstructured.NestedSlice(webhook.Object, "webhooks")
		if len(hooks) != 9 {
			t.Errorf("%d webhooks, want one per kind (8) and one for pods", len(hooks))
		}
		if find(objs, "CustomResourceDefinition", "elasticquotas.scheduling.sigs.k8s.io") == nil {
			t.Errorf("no ElasticQuota CRD with installElasticQuotaCRD")
		}
	})

	t.Run("the compatibility switch", func(t *testing.T) {
		values := map[string]any{"extension": map[string]any{"koord-queue-controllers": map[string]any{"leaveJobsSubmittedRunning": true}}}
		objs, err := render(t, values)
		if err != nil {
			t.Fatal(err)
		}
		if args := containerArgs(t, objs, "koord-queue-controllers"); !slices.Contains(args, "--leave-jobs-submitted-running=true") {
			t.Errorf("controllers args %v, want --leave-jobs-submitted-running=true", args)
		}
	})

	t.Run("contradictions are refused with a message", func(t *testing.T) {
		for name, values := range map[string]map[string]any{
			"manageAllJobs with leaveJobsSubmittedRunning": {"extension": map[string]any{"koord-queue-controllers": map[string]any{
				"manageAllJobs": true, "leaveJobsSubmittedRunning": true}}},
			"rejectJobsSubmittedRunning with leaveJobsSubmittedRunning": {
				"extension":                  map[string]any{"koord-queue-controllers": map[string]any{"leaveJobsSubmittedRunning": true}},
				"rejectJobsSubmittedRunning": map[string]any{"enable": true},
			},
		} {
			if _, err := render(t, values); err == nil || !strings.Contains(err.Error(), "choose one") {
				t.Errorf("%s: error %v, want one saying to choose one", name, err)
			}
		}
	})

	t.Run("extension.spark.enable, as Koord-Queue names it, runs the SparkApplication extension with its rules only", func(t *testing.T) {
		objs, err := render(t, map[string]any{"extension": map[string]any{"spark": map[string]any{"enable": true}}})
		if err != nil {
			t.Fatal(err)
		}
		if args := containerArgs(t, objs, "koord-queue-controllers"); !slices.Contains(args, "--enabled-extensions=job,sparkapplication") {
			t.Errorf("controllers args %v, want --enabled-extensions=job,sparkapplication", args)
		}
		rules := ruleResources(t, objs, "ClusterRole", "koord-queue-controllers")
		if !slices.Contains(rules, "sparkoperator.k8s.io/sparkapplications") || !slices.Contains(rules, "sparkoperator.k8s.io/sparkapplications/finalizers") || slices.Contains(rules, "ray.io/rayjobs") {
			t.Errorf("controllers' rules %v: want SparkApplications and their finalizers, and no RayJobs while Ray is off", rules)
		}
	})
}

// TestInstall installs the chart, every extension on, into a real API
// server: the CRDs are established, RBAC and Deployments created.
func TestInstall(t *testing.T) {
	ctx := context.Background()
	install := action.NewInstall(helmConfig(t, env))
	install.ReleaseName, install.Namespace, install.CreateNamespace = "koord-queue", namespace, true
	rel, err := install.RunWithContext(ctx, loadChart(t), everything())
	if err != nil {
		t.Fatalf("helm install: %v", err)
	}
	if rel.Info.Status != "deployed" {
		t.Errorf("release status %s, want deployed", rel.Info.Status)
	}

	for _, name := range []string{"queues.scheduling.x-k8s.io", "queueunits.scheduling.x-k8s.io", elasticQuotaCRD} {
		waitEstablished(t, env, name)
	}
	for _, name := range []string{"koord-queue", "koord-queue-controllers"} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: namespace, Name: name}, &appsv1.Deployment{}); err != nil {
			t.Errorf("Deployment %s: %v", name, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRole{}); err != nil {
			t.Errorf("ClusterRole %s: %v", name, err)
		}
		if err := env.Client.Get(ctx, client.ObjectKey{Name: name}, &rbacv1.ClusterRoleBinding{}); err != nil {
			t.Errorf("ClusterRoleBinding %s: %v", name, err)
		}
	}

	// koord-queue-controllers writes its own webhook configuration's CA, and
	// no other webhook configuration.
	controllers := "system:serviceaccount:" + namespace + ":koord-queue-controllers"
	for config, want := range map[string]bool{"koord-queue-controllers": true, "someone-elses-webhook": false} {
		for _, verb := range []string{"patch", "update"} {
			review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
				User: controllers,
				ResourceAttributes: &authorizationv1.ResourceAttributes{
					Group: "admissionregistration.k8s.io", Resource: "mutatingwebhookconfigurations", Verb: verb, Name: config,
				},
			}}
			if err := env.Client.Create(ctx, review); err != nil {
				t.Fatal(err)
			}
			if review.Status.Allowed != want {
				t.Errorf("koord-queue-controllers may %s MutatingWebhookConfiguration %s: %v, want %v", verb, config, review.Status.Allowed, want)
			}
		}
	}

	// Each binary reads, watches (by name: a list or watch selecting
	// metadata.name) and updates its own certificate Secret, which the
	// chart creates, and no other Secret of the namespace: not the other
	// binary's, not Helm's releases, not a list of them all.
	own := map[string]string{"koord-queue": "koord-queue-visibility-api-cert", "koord-queue-controllers": "koord-queue-controllers-webhook-cert"}
	for account, secret := range own {
		user := "system:serviceaccount:" + namespace + ":" + account
		for _, name := range []string{own["koord-queue"], own["koord-queue-controllers"], "sh.helm.release.v1.koord-queue.v1", ""} {
			for _, verb := range []string{"get", "list", "watch", "update", "patch", "create", "delete"} {
				want := name == secret && slices.Contains([]string{"get", "list", "watch", "update"}, verb)
				review := &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
					User:               user,
					ResourceAttributes: &authorizationv1.ResourceAttributes{Namespace: namespace, Resource: "secrets", Verb: verb, Name: name},
				}}
				if err := env.Client.Create(ctx, review); err != nil {
					t.Fatal(err)
				}
				if review.Status.Allowed != want {
					t.Errorf("%s may %s Secret %q: %v, want %v", account, verb, name, review.Status.Allowed, want)
				}
			}
		}
	}

	// Each binary's certificate rotator, run as its ServiceAccount under
	// the chart's RBAC, fills its Secret and writes its CA where the API
	// server reads it.
	for _, tc := range []struct {
		account string
		target  rotator.WebhookInfo
	}{
		{"koord-queue", rotator.WebhookInfo{Name: "v1alpha1.visibility.koord-queue.x-k8s.io", Type: rotator.APIService}},
		{"koord-queue-controllers", rotator.WebhookInfo{Name: "koord-queue-controllers", Type: rotator.Mutating}},
	} {
		t.Run(tc.account+"'s certificate rotator needs no other Secret than its own", func(t *testing.T) {
			cfg := rest.CopyConfig(env.Config)
			cfg.Impersonate = rest.ImpersonationConfig{
				UserName: "system:serviceaccount:" + namespace + ":" + tc.account,
				Groups:   []string{"system:serviceaccounts", "system:serviceaccounts:" + namespace, "system:authenticated"},
			}
			secret := types.NamespacedName{Namespace: namespace, Name: own[tc.account]}
			var ready <-chan struct{}
			stop, err := (&testenv.Env{Config: cfg, Scheme: env.Scheme}).StartManager(ctx, func(mgr manager.Manager) error {
				var err error
				ready, err = servingcert.Setup(mgr, servingcert.Options{
					CertDir: t.TempDir(), Rotate: true, Secret: secret, DNSName: tc.account + "." + namespace + ".svc",
					Targets: []rotator.WebhookInfo{tc.target}, RotatorName: "rotator-" + tc.account,
				})
				return err
			})
			if err != nil {
				t.Fatal(err)
			}
			defer stop()
			select {
			case <-ready:
			case <-time.After(testenv.DefaultTimeout):
				t.Fatalf("the certificate of %s is not ready after %s", secret, testenv.DefaultTimeout)
			}
			var s corev1.Secret
			if err := env.Client.Get(ctx, client.ObjectKey(secret), &s); err != nil {
				t.Fatal(err)
			}
			if len(s.Data[corev1.TLSCertKey]) == 0 {
				t.Errorf("Secret %s holds no certificate", secret)
			}
		})
	}
}

// helmConfig is Helm's configuration for releases in namespace (the
// chart's usual one, unless another is given) on e's API server, as an
// administrator, its releases kept in Secrets as helm's are.
func helmConfig(t *testing.T, e *testenv.Env, releaseNamespace ...string) *action.Configuration {
	ns := namespace
	if len(releaseNamespace) > 0 {
		ns = releaseNamespace[0]
	}
	t.Helper()
	kubeconfig := filepath.Join(t.TempDir(), "kubeconfig")
	if err := e.WriteKubeconfig(kubeconfig); err != nil {
		t.Fatal(err)
	}
	flags := genericclioptions.NewConfigFlags(false)
	flags.KubeConfig = ptr.To(kubeconfig)
	flags.Namespace = ptr.To(ns)
	cfg := &action.Configuration{}
	if err := cfg.Init(flags, ns, "secret", func(format string, v ...any) { t.Logf(format, v...) }); err != nil {
		t.Fatal(err)
	}
	return cfg
}
