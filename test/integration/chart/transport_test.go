package chart

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/koord-queue/koord-queue/test/helmchart"
)

// TestVisibilityServingValues: how the visibility API and dashboard are
// served (TLS, its certificate, plain HTTP) and which token audiences they
// accept follow the visibility values, and the Service's port is named for
// the scheme.
func TestVisibilityServingValues(t *testing.T) {
	const certDir = "/etc/koord-queue-visibility/certs"
	for name, tc := range map[string]struct {
		visibility map[string]any
		wantError  string
		wantArgs   []string
		// notArgs start no argument.
		notArgs      []string
		wantSecret   string // mounted at certDir; empty: no such volume
		wantPortName string
	}{
		"by default HTTPS with a self-signed certificate and the API server's audience": {
			notArgs:      []string{"--visibility-cert-dir", "--visibility-insecure-serving", "--visibility-token-audiences"},
			wantPortName: "https",
		},
		"tls.secretName serves that Secret's certificate": {
			visibility:   map[string]any{"tls": map[string]any{"secretName": "visibility-tls"}},
			wantArgs:     []string{"--visibility-cert-dir=" + certDir},
			notArgs:      []string{"--visibility-insecure-serving"},
			wantSecret:   "visibility-tls",
			wantPortName: "https",
		},
		"insecureServing serves plain HTTP": {
			visibility:   map[string]any{"insecureServing": true},
			wantArgs:     []string{"--visibility-insecure-serving"},
			notArgs:      []string{"--visibility-cert-dir"},
			wantPortName: "http",
		},
		"tokenAudiences are the audiences a token must be meant for": {
			visibility:   map[string]any{"tokenAudiences": []any{"koord-queue", "https://queue.example"}},
			wantArgs:     []string{"--visibility-token-audiences=koord-queue,https://queue.example"},
			wantPortName: "https",
		},
		"a certificate and plain HTTP together are refused": {
			visibility: map[string]any{"insecureServing": true, "tls": map[string]any{"secretName": "visibility-tls"}},
			wantError:  "visibility.insecureServing",
		},
	} {
		t.Run(name, func(t *testing.T) {
			values := map[string]any{}
			if tc.visibility != nil { // a null would drop the defaults
				values["visibility"] = tc.visibility
			}
			objs := renderOrRefuse(t, values, tc.wantError)
			if objs == nil {
				return
			}
			args := containerArgs(t, objs, "koord-queue")
			for _, want := range tc.wantArgs {
				if !slices.Contains(args, want) {
					t.Errorf("koord-queue's args %v: want %s", args, want)
				}
			}
			for _, not := range tc.notArgs {
				if slices.ContainsFunc(args, func(a string) bool { return strings.HasPrefix(a, not) }) {
					t.Errorf("koord-queue's args %v: want no %s", args, not)
				}
			}
			if got := mountedSecret(t, objs, "koord-queue", certDir); got != tc.wantSecret {
				t.Errorf("Secret mounted at %s: %q, want %q", certDir, got, tc.wantSecret)
			}
			svc := find(objs, "Service", "koord-queue-visibility")
			if svc == nil {
				t.Fatal("no Service koord-queue-visibility")
			}
			ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
			if got := ports[0].(map[string]any)["name"]; got != tc.wantPortName {
				t.Errorf("Service koord-queue-visibility's port is named %v, want %s", got, tc.wantPortName)
			}
		})
	}
}

// mountedSecret is the Secret whose volume deployment's first container
// mounts at path, or "".
func mountedSecret(t *testing.T, objs []*unstructured.Unstructured, deployment, path string) string {
	t.Helper()
	d := find(objs, "Deployment", deployment)
	pod, _, _ := unstructured.NestedMap(d.Object, "spec", "template", "spec")
	containers, _, _ := unstructured.NestedSlice(pod, "containers")
	mounts, _, _ := unstructured.NestedSlice(containers[0].(map[string]any), "volumeMounts")
	volume := ""
	for _, m := range mounts {
		if m := m.(map[string]any); m["mountPath"] == path {
			volume, _ = m["name"].(string)
			if m["readOnly"] != true {
				t.Errorf("%s is mounted writable", path)
			}
		}
	}
	volumes, _, _ := unstructured.NestedSlice(pod, "volumes")
	for _, v := range volumes {
		if v := v.(map[string]any); v["name"] == volume {
			name, _, _ := unstructured.NestedString(v, "secret", "secretName")
			return name
		}
	}
	return ""
}

// TestNetworkPolicy: networkPolicy.enable renders one NetworkPolicy per
// Deployment that admits, on each serving port, only the peers its value
// names (none: the port is closed), and the API server's calls (the
// webhook, the aggregated API) from apiServerFrom, from anywhere when it
// is empty. Off by default.
func TestNetworkPolicy(t *testing.T) {
	monitoring := map[string]any{"namespaceSelector": map[string]any{"matchLabels": map[string]any{"kubernetes.io/metadata.name": "monitoring"}}}
	tools := map[string]any{"podSelector": map[string]any{"matchLabels": map[string]any{"app": "queue-dashboard"}}}
	controlPlane := map[string]any{"ipBlock": map[string]any{"cidr": "10.0.0.0/24"}}
	// rules are the peers ("*" for any) admitted to each port.
	type rules map[string]string
	for name, tc := range map[string]struct {
		values map[string]any
		// want is each Deployment's NetworkPolicy; nil: none rendered.
		want map[string]rules
	}{
		"off by default": {},
		"on: visibility and metrics from the peers named, the API server's ports from anywhere": {
			values: map[string]any{"networkPolicy": map[string]any{
				"enable":         true,
				"visibilityFrom": []any{tools},
				"metricsFrom":    []any{monitoring},
			}},
			want: map[string]rules{
				"koord-queue":             {"8090": "podSelector app=queue-dashboard", "10259": "namespaceSelector kubernetes.io/metadata.name=monitoring", "8443": "*"},
				"koord-queue-controllers": {"8080": "namespaceSelector kubernetes.io/metadata.name=monitoring", "9443": "*"},
			},
		},
		"on with nothing named: only the API server's ports are open": {
			values: map[string]any{"networkPolicy": map[string]any{"enable": true}},
			want: map[string]rules{
				"koord-queue":             {"8443": "*"},
				"koord-queue-controllers": {"9443": "*"},
			},
		},
		"apiServerFrom narrows the webhook and the aggregated API to the control plane": {
			values: map[string]any{
				"networkPolicy": map[string]any{"enable": true, "apiServerFrom": []any{controlPlane}},
				"webhook":       map[string]any{"port": 9444},
			},
			want: map[string]rules{
				"koord-queue":             {"8443": "ipBlock 10.0.0.0/24"},
				"koord-queue-controllers": {"9444": "ipBlock 10.0.0.0/24"},
			},
		},
		"a port not served is not opened": {
			values: map[string]any{
				"networkPolicy":          map[string]any{"enable": true, "visibilityFrom": []any{tools}},
				"enableVisibilityServer": false,
				"visibility":             map[string]any{"aggregatedAPI": map[string]any{"enable": false}},
				"webhook":                map[string]any{"enable": false},
			},
			want: map[string]rules{"koord-queue": {}, "koord-queue-controllers": {}},
		},
	} {
		t.Run(name, func(t *testing.T) {
			objs, err := render(t, tc.values)
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]rules{}
			for _, o := range objs {
				if o.GetKind() != "NetworkPolicy" {
					continue
				}
				labels, _, _ := unstructured.NestedStringMap(o.Object, "spec", "podSelector", "matchLabels")
				if labels["app.kubernetes.io/instance"] != helmchart.Release {
					t.Errorf("NetworkPolicy %s selects %v, not this release's pods", o.GetName(), labels)
				}
				if types, _, _ := unstructured.NestedStringSlice(o.Object, "spec", "policyTypes"); !slices.Equal(types, []string{"Ingress"}) {
					t.Errorf("NetworkPolicy %s policyTypes %v, want [Ingress]", o.GetName(), types)
				}
				byPort := rules{}
				ingress, _, _ := unstructured.NestedSlice(o.Object, "spec", "ingress")
				for _, r := range ingress {
					r := r.(map[string]any)
					peers := "*"
					if from, ok := r["from"].([]any); ok {
						peers = describePeers(from)
					}
					ports, _ := r["ports"].([]any)
					for _, p := range ports {
						byPort[fmt.Sprint(p.(map[string]any)["port"])] = peers
					}
				}
				got[labels["app.kubernetes.io/name"]] = byPort
			}
			if tc.want == nil {
				tc.want = map[string]rules{}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("ingress by Deployment and port (-want +got):\n%s", diff)
			}
		})
	}
}

// describePeers writes NetworkPolicy peers as "podSelector k=v",
// "namespaceSelector k=v" or "ipBlock cidr", joined by "; ".
func describePeers(from []any) string {
	var out []string
	for _, f := range from {
		for kind, v := range f.(map[string]any) {
			v := v.(map[string]any)
			if kind == "ipBlock" {
				out = append(out, "ipBlock "+v["cidr"].(string))
				continue
			}
			var labels []string
			for k, val := range v["matchLabels"].(map[string]any) {
				labels = append(labels, k+"="+val.(string))
			}
			slices.Sort(labels)
			out = append(out, kind+" "+strings.Join(labels, ","))
		}
	}
	slices.Sort(out)
	return strings.Join(out, "; ")
}
