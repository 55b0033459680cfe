package spark

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	schedulingv1alpha1 "github.com/koord-queue/koord-queue/apis/scheduling/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/extensions/extensionstest"
	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
	sparkv1beta2 "github.com/koord-queue/koord-queue/pkg/extensions/spark/v1beta2"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
	"github.com/koord-queue/koord-queue/pkg/resources"
)

// podSetWant is a pod set's count and the request of each of its pods.
type podSetWant struct {
	Count   int32
	Request corev1.ResourceList
}

func TestPodSets(t *testing.T) {
	app := func() *extensionstest.SparkApplicationWrapper { return extensionstest.MakeSparkApplication("pi", "ns") }
	with := func(w *extensionstest.SparkApplicationWrapper, f func(*sparkv1beta2.SparkApplicationSpec)) *sparkv1beta2.SparkApplication {
		a := w.Obj()
		f(&a.Spec)
		return a
	}
	cases := map[string]struct {
		app     *sparkv1beta2.SparkApplication
		want    map[string]podSetWant
		wantErr string
	}{
		"nothing set: Spark's defaults, 1 core and 1g plus 384 MiB, one executor": {
			app: app().Obj(),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {1, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"docs/tasks/run-spark.md's spark-pi": {
			app: app().Driver(1, "512m").Executors(2, 1, "2g").Obj(),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "896Mi")},  // 512 + 384
				"executor": {2, qt.Res("cpu", "1", "memory", "2432Mi")}, // 2048 + 384
			},
		},
		"the default overhead is a tenth of memory when that is more than 384 MiB": {
			app: app().Driver(2, "4g").Executors(3, 2, "8g").Obj(),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "2", "memory", "4505Mi")}, // 4096 + 409
				"executor": {3, qt.Res("cpu", "2", "memory", "9011Mi")}, // 8192 + 819
			},
		},
		"Python's default overhead is four tenths": {
			app: app().Type(sparkv1beta2.SparkApplicationTypePython).Driver(1, "2g").Executors(1, 1, "512m").Obj(),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "2867Mi")}, // 2048 + 819
				"executor": {1, qt.Res("cpu", "1", "memory", "896Mi")},  // 512 + 384
			},
		},
		"memoryOverhead, in MiB without a unit, and memoryOverheadFactor": {
			app: with(app().Driver(1, "2g").Executors(2, 1, "2g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Driver.MemoryOverhead = ptr.To("1024")
				s.MemoryOverheadFactor = ptr.To("0.5")
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "3Gi")},
				"executor": {2, qt.Res("cpu", "1", "memory", "3Gi")},
			},
		},
		"coreRequest wins over cores; a gpu is requested as named": {
			app: with(app().Driver(2, "1g").Executors(4, 2, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Driver.CoreRequest = ptr.To("500m")
				s.Executor.CoreRequest = ptr.To("1.5")
				s.Executor.GPU = &sparkv1beta2.GPUSpec{Name: "nvidia.com/gpu", Quantity: 1}
				s.Executor.CoreLimit = ptr.To("4")
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "500m", "memory", "1408Mi")},
				"executor": {4, qt.Res("cpu", "1500m", "memory", "1408Mi", "nvidia.com/gpu", "1")},
			},
		},
		"cores given as a string, as the operator's newer schema allows": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) { s.Driver.Cores = ptr.To(intstr.FromString("0.5")) }),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "500m", "memory", "1408Mi")},
				"executor": {1, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"sparkConf stands in for unset fields": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{
					"spark.driver.cores": "2", "spark.driver.memory": "2g", "spark.driver.memoryOverhead": "512m",
					"spark.executor.instances": "5", "spark.kubernetes.executor.request.cores": "250m", "spark.executor.memory": "4096m",
				}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "2", "memory", "2560Mi")},
				"executor": {5, qt.Res("cpu", "250m", "memory", "4505Mi")},
			},
		},
		"a field wins over its Spark property": {
			app: with(app().Executors(2, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{"spark.executor.instances": "5", "spark.executor.memory": "8g"}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {2, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"dynamic allocation asks for its maximum": {
			app: with(app().Executors(2, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.DynamicAllocation = &sparkv1beta2.DynamicAllocation{Enabled: true, InitialExecutors: ptr.To[int32](3), MinExecutors: ptr.To[int32](1), MaxExecutors: ptr.To[int32](10)}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {10, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"dynamic allocation with nothing to start with starts one executor": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{"spark.dynamicAllocation.enabled": "true"}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {1, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"the webhook's sidecars add their requests to each pod": {
			app: with(app().Executors(2, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Executor.Sidecars = []corev1.Container{container("log-shipper", "250m", "128Mi")}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {2, qt.Res("cpu", "1250m", "memory", "1536Mi")},
			},
		},
		"the webhook's init containers: the largest sets the pod's request": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Driver.InitContainers = []corev1.Container{container("fetch", "2", "4Gi"), container("unpack", "500m", "64Mi")}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "2", "memory", "4Gi")},
				"executor": {1, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"a pod template's containers count; its Spark container takes Spark's cpu and memory": {
			app: with(app().Executors(3, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				spark := container("spark-kubernetes-executor", "8", "1Gi")
				spark.Resources.Requests[corev1.ResourceEphemeralStorage] = resource.MustParse("1Gi")
				mesh := container("mesh", "100m", "64Mi")
				mesh.RestartPolicy = ptr.To(corev1.ContainerRestartPolicyAlways)
				s.Executor.Template = rawTemplate(t, corev1.PodSpec{
					Containers:     []corev1.Container{container("proxy", "500m", "256Mi"), spark},
					InitContainers: []corev1.Container{mesh},
				})
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {3, qt.Res("cpu", "1600m", "memory", "1728Mi", "ephemeral-storage", "1Gi")}, // 1408 + 256 + 64
			},
		},
		"a template without Spark's container name: its first container is Spark's": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Driver.Template = rawTemplate(t, corev1.PodSpec{Containers: []corev1.Container{container("main", "4", "8Gi"), container("proxy", "500m", "256Mi")}})
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1500m", "memory", "1664Mi")},
				"executor": {1, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"a sidecar the template already has (same name and image) is not added twice": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Executor.Template = rawTemplate(t, corev1.PodSpec{Containers: []corev1.Container{{Name: "spark-kubernetes-executor"}, container("proxy", "500m", "256Mi")}})
				s.Executor.Sidecars = []corev1.Container{container("proxy", "500m", "256Mi")}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi")},
				"executor": {1, qt.Res("cpu", "1500m", "memory", "1664Mi")},
			},
		},
		"spark.<role>.resource.<name>.amount asks for <vendor>/<name>": {
			app: with(app().Executors(2, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{
					"spark.executor.resource.gpu.amount": "2", "spark.executor.resource.gpu.vendor": "nvidia.com",
					"spark.executor.resource.gpu.discoveryScript": "/opt/getGpus.sh",
					"spark.driver.resource.fpga.amount":           "1", "spark.driver.resource.fpga.vendor": "xilinx.com",
					"spark.executor.resource.none.amount": "0", // asks for nothing, as Spark drops it
				}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1408Mi", "xilinx.com/fpga", "1")},
				"executor": {2, qt.Res("cpu", "1", "memory", "1408Mi", "nvidia.com/gpu", "2")},
			},
		},
		"sparkConf's spark.kubernetes.memoryOverheadFactor wins over spec.memoryOverheadFactor, which the operator passes before it": {
			app: with(app().Driver(1, "4g").Executors(1, 1, "4g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.MemoryOverheadFactor = ptr.To("0.2")
				s.SparkConf = map[string]string{"spark.kubernetes.memoryOverheadFactor": "0.5", "spark.executor.memoryOverheadFactor": "0.25"}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "6Gi")}, // 4096 + 2048
				"executor": {1, qt.Res("cpu", "1", "memory", "5Gi")}, // 4096 + 1024
			},
		},
		"an executor's off-heap memory, and a Python executor's PySpark memory, are added to its pod": {
			app: with(app().Type(sparkv1beta2.SparkApplicationTypePython).Executors(1, 1, "1g"), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{
					"spark.memory.offHeap.enabled": "true", "spark.memory.offHeap.size": "536870912", // bytes without a unit
					"spark.executor.pyspark.memory": "256", // MiB without a unit
				}
			}),
			want: map[string]podSetWant{
				"driver":   {1, qt.Res("cpu", "1", "memory", "1433Mi")}, // 1024 + 409
				"executor": {1, qt.Res("cpu", "1", "memory", "2201Mi")}, // 1024 + 409 + 512 + 256
			},
		},
		"client mode has no driver pod": {
			app: app().Mode(sparkv1beta2.DeployModeClient).Executors(2, 1, "1g").Obj(),
			want: map[string]podSetWant{
				"executor": {2, qt.Res("cpu", "1", "memory", "1408Mi")},
			},
		},
		"a fractional memory is refused, naming the field": {
			app:     app().Driver(1, "1.5g").Obj(),
			wantErr: `spec.driver: memory: "1.5g": Spark takes no fractions here`,
		},
		"an unknown unit is refused": {
			app:     app().Executors(1, 1, "2Gi").Obj(),
			wantErr: `spec.executor: memory: "2Gi": unknown unit "gi"`,
		},
		"a malformed coreRequest is refused": {
			app:     with(app(), func(s *sparkv1beta2.SparkApplicationSpec) { s.Executor.CoreRequest = ptr.To("lots") }),
			wantErr: `spec.executor: coreRequest "lots" is not a CPU quantity`,
		},
		"no cores is refused": {
			app:     app().Driver(0, "1g").Obj(),
			wantErr: "spec.driver: cores 0: want at least 1",
		},
		"a malformed overhead factor is refused": {
			app:     with(app(), func(s *sparkv1beta2.SparkApplicationSpec) { s.MemoryOverheadFactor = ptr.To("a lot") }),
			wantErr: `memoryOverheadFactor "a lot" is not a factor`,
		},
		"a malformed executor count in sparkConf is refused": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{"spark.executor.instances": "many"}
			}),
			wantErr: `sparkConf spark.executor.instances "many": want a whole number`,
		},
		"a custom resource without a vendor is refused, as Spark refuses it": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.SparkConf = map[string]string{"spark.executor.resource.gpu.amount": "1"}
			}),
			wantErr: "spec.executor: sparkConf spark.executor.resource.gpu.vendor: Spark asks for the resource <vendor>/gpu",
		},
		"a pod template that is no pod template is refused": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Executor.Template = &runtime.RawExtension{Raw: []byte(`{"spec":{"containers":"main"}}`)}
			}),
			wantErr: "spec.executor: template: ",
		},
		"a gpu without a name is refused": {
			app: with(app(), func(s *sparkv1beta2.SparkApplicationSpec) {
				s.Executor.GPU = &sparkv1beta2.GPUSpec{Quantity: 1}
			}),
			wantErr: "spec.executor: gpu: want a resource name",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			before := tc.app.DeepCopy()
			sets, ok := podSets(t, (*Application)(tc.app), tc.wantErr)
			if diff := cmp.Diff(before, tc.app); diff != "" {
				t.Errorf("PodSets changed the application (-before +after):\n%s", diff)
			}
			if !ok {
				return
			}
			got := map[string]podSetWant{}
			for _, s := range sets {
				got[s.Name] = podSetWant{s.Count, resources.PodRequests(&s.Template.Spec)}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("pod sets (-want +got):\n%s", diff)
			}
		})
	}
}

// podSets are a's pod sets, ok when it has them; an error other than
// one saying wantErr ("" for none) fails the test.
func podSets(t *testing.T, a *Application, wantErr string) (sets []framework.PodSet, ok bool) {
	t.Helper()
	sets, err := a.PodSets()
	switch {
	case wantErr != "":
		if err == nil || !strings.Contains(err.Error(), wantErr) {
			t.Errorf("PodSets error %v, want one saying %q", err, wantErr)
		}
		return nil, false
	case err != nil:
		t.Errorf("PodSets: %v", err)
		return nil, false
	}
	return sets, true
}

// container is a container requesting cpu and memory.
func container(name, cpu, memory string) corev1.Container {
	return corev1.Container{Name: name, Image: name + ":1", Resources: corev1.ResourceRequirements{Requests: qt.Res("cpu", cpu, "memory", memory)}}
}

// rawTemplate is spec as a SparkApplication's pod template.
func rawTemplate(t *testing.T, spec corev1.PodSpec) *runtime.RawExtension {
	t.Helper()
	raw, err := json.Marshal(corev1.PodTemplateSpec{Spec: spec})
	if err != nil {
		t.Fatal(err)
	}
	return &runtime.RawExtension{Raw: raw}
}

func TestDynamicAllocation(t *testing.T) {
	dynamic := func(d sparkv1beta2.DynamicAllocation, conf map[string]string) *Application {
		a := extensionstest.MakeSparkApplication("pi", "ns").Executors(2, 1, "1g").Obj()
		a.Spec.DynamicAllocation, a.Spec.SparkConf = &d, conf
		return (*Application)(a)
	}
	cases := map[string]struct {
		app          *Application
		wantCount    int32
		wantMin      *int32
		wantWarnings int
		wantErr      string
	}{
		"without dynamic allocation: instances, whole": {
			app:       (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Executors(4, 1, "1g").Obj()),
			wantCount: 4,
		},
		"up to maxExecutors, starting with at least the most of initial, minimum and instances": {
			app:       dynamic(sparkv1beta2.DynamicAllocation{Enabled: true, InitialExecutors: ptr.To[int32](3), MinExecutors: ptr.To[int32](1), MaxExecutors: ptr.To[int32](10)}, nil),
			wantCount: 10, wantMin: ptr.To[int32](3),
		},
		"sparkConf's maxExecutors when the field is not set": {
			app:       dynamic(sparkv1beta2.DynamicAllocation{Enabled: true}, map[string]string{"spark.dynamicAllocation.maxExecutors": "6"}),
			wantCount: 6, wantMin: ptr.To[int32](2),
		},
		"dynamic allocation enabled in sparkConf, the field's disabled settings not passed": {
			app: dynamic(sparkv1beta2.DynamicAllocation{Enabled: false, MaxExecutors: ptr.To[int32](100)},
				map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "5"}),
			wantCount: 5, wantMin: ptr.To[int32](2),
		},
		"a maximum no more than the start: whole": {
			app:       dynamic(sparkv1beta2.DynamicAllocation{Enabled: true, MaxExecutors: ptr.To[int32](2)}, nil),
			wantCount: 2,
		},
		"no maximum: what it starts with, and a warning that it is capped there": {
			app:       dynamic(sparkv1beta2.DynamicAllocation{Enabled: true, InitialExecutors: ptr.To[int32](3)}, nil),
			wantCount: 3, wantWarnings: 1,
		},
		"a start above the maximum is refused, as Spark refuses it": {
			app:     dynamic(sparkv1beta2.DynamicAllocation{Enabled: true, InitialExecutors: ptr.To[int32](5), MaxExecutors: ptr.To[int32](4)}, nil),
			wantErr: "start with 5 executors, more than maxExecutors 4",
		},
		"a maximum of none is refused, as Spark refuses it": {
			app:     dynamic(sparkv1beta2.DynamicAllocation{Enabled: true, MaxExecutors: ptr.To[int32](0)}, nil),
			wantErr: "dynamicAllocation.maxExecutors 0",
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			sets, ok := podSets(t, tc.app, tc.wantErr)
			if !ok {
				return
			}
			e := sets[len(sets)-1]
			if e.Name != ExecutorPodSet || e.Count != tc.wantCount || !ptr.Equal(e.MinCount, tc.wantMin) {
				t.Errorf("pod set %s of %d pods, at least %v; want executor of %d, at least %v", e.Name, e.Count, ptr.Deref(e.MinCount, -1), tc.wantCount, ptr.Deref(tc.wantMin, -1))
			}
			if got := tc.app.Warnings(); len(got) != tc.wantWarnings {
				t.Errorf("warnings %v, want %d", got, tc.wantWarnings)
			}
		})
	}
}

func TestDynamicAllocationIsCappedAtRelease(t *testing.T) {
	maxOf := func(a *Application) (field *int32, conf string) {
		if d := a.Spec.DynamicAllocation; d != nil {
			field = d.MaxExecutors
		}
		return field, a.Spec.SparkConf["spark.dynamicAllocation.maxExecutors"]
	}
	executorSet := func(t *testing.T, a *Application) framework.PodSet {
		t.Helper()
		sets, err := a.PodSets()
		if err != nil {
			t.Fatal(err)
		}
		return sets[len(sets)-1]
	}
	t.Run("admitted partially: maxExecutors is what was admitted, and comes back when suspended", func(t *testing.T) {
		a := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Executors(2, 1, "1g").Obj())
		a.Spec.DynamicAllocation = &sparkv1beta2.DynamicAllocation{Enabled: true, MaxExecutors: ptr.To[int32](10)}
		var _ framework.JobWithPartialAdmission = a
		a.RunWithCounts(map[string]int32{ExecutorPodSet: 4})
		a.Resume()
		if field, _ := maxOf(a); ptr.Deref(field, -1) != 4 {
			t.Errorf("released with maxExecutors %v, want 4", ptr.Deref(field, -1))
		}
		if s := executorSet(t, a); s.Count != 10 {
			t.Errorf("while capped the executors ask for %d, want their own 10", s.Count)
		}
		a.Suspend()
		if !a.RestoreCounts() {
			t.Fatal("RestoreCounts changed nothing")
		}
		if field, _ := maxOf(a); ptr.Deref(field, -1) != 10 {
			t.Errorf("restored maxExecutors %v, want 10", ptr.Deref(field, -1))
		}
		if _, ok := a.Annotations[schedulingv1alpha1.AnnotationOriginalMaxExecutors]; ok || a.RestoreCounts() {
			t.Errorf("the original is kept after RestoreCounts: %v", a.Annotations)
		}
	})
	t.Run("dynamic allocation from sparkConf is capped in sparkConf", func(t *testing.T) {
		a := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Executors(2, 1, "1g").Obj())
		a.Spec.SparkConf = map[string]string{"spark.dynamicAllocation.enabled": "true", "spark.dynamicAllocation.maxExecutors": "8"}
		a.RunWithCounts(map[string]int32{ExecutorPodSet: 3})
		if field, conf := maxOf(a); field != nil || conf != "3" {
			t.Errorf("released with maxExecutors %v in the field and %q in sparkConf, want 3 in sparkConf", field, conf)
		}
	})
	t.Run("no maximum: released with what it starts with as its maximum", func(t *testing.T) {
		a := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Executors(2, 1, "1g").Obj())
		a.Spec.DynamicAllocation = &sparkv1beta2.DynamicAllocation{Enabled: true, InitialExecutors: ptr.To[int32](3)}
		a.Resume()
		if field, _ := maxOf(a); ptr.Deref(field, -1) != 3 {
			t.Errorf("released with maxExecutors %v, want 3", ptr.Deref(field, -1))
		}
		if s := executorSet(t, a); s.Count != 3 || s.MinCount != nil {
			t.Errorf("then it asks for %d executors, at least %v; want 3, whole", s.Count, s.MinCount)
		}
	})
}

func TestSuspendAndResume(t *testing.T) {
	t.Run("spec.suspend", func(t *testing.T) {
		a := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Suspend(false).Obj())
		if a.IsSuspended() {
			t.Fatal("an application with spec.suspend false is suspended")
		}
		a.Suspend()
		if !a.IsSuspended() || !ptr.Deref(a.Spec.Suspend, false) {
			t.Errorf("after Suspend: suspended %v, spec.suspend %v", a.IsSuspended(), a.Spec.Suspend)
		}
		if _, ok := a.Annotations[schedulingv1alpha1.AnnotationSuspend]; ok {
			t.Errorf("Suspend added the annotation to an application that does not use it: %v", a.Annotations)
		}
		a.Resume()
		if a.IsSuspended() {
			t.Error("suspended after Resume")
		}
	})
	t.Run("Koord-Queue's annotation is kept in step", func(t *testing.T) {
		a := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").SuspendAnnotation().Obj())
		if !a.IsSuspended() {
			t.Fatal("an application with the suspend annotation is not suspended")
		}
		a.Resume()
		if a.IsSuspended() || a.Annotations[schedulingv1alpha1.AnnotationSuspend] != "false" || ptr.Deref(a.Spec.Suspend, true) {
			t.Errorf("after Resume: suspended %v, annotations %v, spec.suspend %v; want the annotation \"false\" and spec.suspend false",
				a.IsSuspended(), a.Annotations, a.Spec.Suspend)
		}
		a.Suspend()
		if a.Annotations[schedulingv1alpha1.AnnotationSuspend] != "true" || !ptr.Deref(a.Spec.Suspend, false) {
			t.Errorf("after Suspend: annotations %v, spec.suspend %v; want both set", a.Annotations, a.Spec.Suspend)
		}
	})
}

func TestStatus(t *testing.T) {
	executors := func(states ...sparkv1beta2.ExecutorState) map[string]sparkv1beta2.ExecutorState {
		m := map[string]sparkv1beta2.ExecutorState{}
		for i, s := range states {
			m["exec-"+string(rune('a'+i))] = s
		}
		return m
	}
	cases := map[string]struct {
		app           *sparkv1beta2.SparkApplication
		wantPods      map[string]framework.PodCount
		wantFinished  bool
		wantSucceeded bool
		wantMessage   string
	}{
		"new and suspended: nothing runs or waits": {
			app:      extensionstest.MakeSparkApplication("pi", "ns").Obj(),
			wantPods: map[string]framework.PodCount{"driver": {}, "executor": {}},
		},
		"submitted: the driver waits": {
			app:      extensionstest.MakeSparkApplication("pi", "ns").Suspend(false).State(sparkv1beta2.ApplicationStateSubmitted).Obj(),
			wantPods: map[string]framework.PodCount{"driver": {Pending: 1}, "executor": {}},
		},
		"running, with executors running and waiting": {
			app: func() *sparkv1beta2.SparkApplication {
				a := extensionstest.MakeSparkApplication("pi", "ns").Suspend(false).State(sparkv1beta2.ApplicationStateRunning).Obj()
				a.Status.ExecutorState = executors(sparkv1beta2.ExecutorStateRunning, sparkv1beta2.ExecutorStateRunning, sparkv1beta2.ExecutorStatePending, sparkv1beta2.ExecutorStateCompleted)
				return a
			}(),
			wantPods: map[string]framework.PodCount{"driver": {Running: 1}, "executor": {Running: 2, Pending: 1}},
		},
		"suspended: executor states the operator left behind are not counted": {
			app: func() *sparkv1beta2.SparkApplication {
				a := extensionstest.MakeSparkApplication("pi", "ns").State(sparkv1beta2.ApplicationStateSuspended).Obj()
				a.Status.ExecutorState = executors(sparkv1beta2.ExecutorStateRunning, sparkv1beta2.ExecutorStatePending)
				return a
			}(),
			wantPods: map[string]framework.PodCount{"driver": {}, "executor": {}},
		},
		"suspending: the executors still count until the operator has stopped them": {
			app: func() *sparkv1beta2.SparkApplication {
				a := extensionstest.MakeSparkApplication("pi", "ns").State(sparkv1beta2.ApplicationStateSuspending).Obj()
				a.Status.ExecutorState = executors(sparkv1beta2.ExecutorStateRunning)
				return a
			}(),
			wantPods: map[string]framework.PodCount{"driver": {}, "executor": {Running: 1}},
		},
		"completed": {
			app:           extensionstest.MakeSparkApplication("pi", "ns").State(sparkv1beta2.ApplicationStateCompleted).Obj(),
			wantPods:      map[string]framework.PodCount{"driver": {}, "executor": {}},
			wantFinished:  true,
			wantSucceeded: true,
			wantMessage:   "the Spark application completed",
		},
		"failed, with the operator's message": {
			app: func() *sparkv1beta2.SparkApplication {
				a := extensionstest.MakeSparkApplication("pi", "ns").State(sparkv1beta2.ApplicationStateFailed).Obj()
				a.Status.AppState.ErrorMessage = "driver container failed with ExitCode: 1"
				return a
			}(),
			wantPods:     map[string]framework.PodCount{"driver": {}, "executor": {}},
			wantFinished: true,
			wantMessage:  "driver container failed with ExitCode: 1",
		},
		"a failed submission the operator may retry has not finished": {
			app:      extensionstest.MakeSparkApplication("pi", "ns").Suspend(false).State(sparkv1beta2.ApplicationStateFailedSubmission).Obj(),
			wantPods: map[string]framework.PodCount{"driver": {}, "executor": {}},
		},
		"failing, before the operator decides whether to run it again, has not finished": {
			app:      extensionstest.MakeSparkApplication("pi", "ns").Suspend(false).State(sparkv1beta2.ApplicationStateFailing).Obj(),
			wantPods: map[string]framework.PodCount{"driver": {}, "executor": {}},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			a := (*Application)(tc.app)
			if diff := cmp.Diff(tc.wantPods, a.Pods()); diff != "" {
				t.Errorf("Pods (-want +got):\n%s", diff)
			}
			msg, ok, finished := a.Finished()
			if finished != tc.wantFinished || ok != tc.wantSucceeded || msg != tc.wantMessage {
				t.Errorf("Finished = (%q, %v, %v), want (%q, %v, %v)", msg, ok, finished, tc.wantMessage, tc.wantSucceeded, tc.wantFinished)
			}
		})
	}
}

func TestPriority(t *testing.T) {
	a := extensionstest.MakeSparkApplication("pi", "ns").Obj()
	a.Spec.Driver.PriorityClassName = ptr.To("driver-class")
	if got, field := (*Application)(a).PriorityClass(); got != "driver-class" || field != "spec.driver.priorityClassName" {
		t.Errorf("priority class %q of %s, want the driver's without batchSchedulerOptions", got, field)
	}
	a.Spec.BatchSchedulerOptions = &sparkv1beta2.BatchSchedulerConfiguration{PriorityClassName: ptr.To("high")}
	if got, field := (*Application)(a).PriorityClass(); got != "high" || field != "spec.batchSchedulerOptions.priorityClassName" {
		t.Errorf("priority class %q of %s, want batchSchedulerOptions' high", got, field)
	}
}

func TestPods(t *testing.T) {
	integ := Integration()
	a := extensionstest.MakeSparkApplication("pi", "ns").Obj()
	a.UID = "app-uid"
	appRef := metav1.OwnerReference{APIVersion: "sparkoperator.k8s.io/v1beta2", Kind: "SparkApplication", Name: "pi", UID: "app-uid", Controller: ptr.To(true)}
	driverRef := metav1.OwnerReference{APIVersion: "v1", Kind: "Pod", Name: "pi-driver", UID: "driver-uid", Controller: ptr.To(true)}
	driver := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pi-driver", Labels: map[string]string{"spark-role": "driver"}, OwnerReferences: []metav1.OwnerReference{appRef}}}
	executor := &corev1.Pod{ObjectMeta: metav1.ObjectMeta{Name: "pi-exec-1", Labels: map[string]string{"spark-role": "executor"}, OwnerReferences: []metav1.OwnerReference{driverRef}}}

	if got := integ.PodSetOf(driver); got != DriverPodSet {
		t.Errorf("the driver pod is in pod set %q, want driver", got)
	}
	if got := integ.PodSetOf(executor); got != ExecutorPodSet {
		t.Errorf("an executor pod is in pod set %q, want executor", got)
	}
	want := []string{"SparkApplication.sparkoperator.k8s.io/pi", "Pod/pi-driver"}
	if diff := cmp.Diff(want, integ.JobPodOwnersIndex(a)); diff != "" {
		t.Errorf("pod owners (-want +got):\n%s", diff)
	}
	for _, p := range []*corev1.Pod{driver, executor} {
		if got := framework.PodOwnerIndex(p); len(got) != 1 || !slices.Contains(want, got[0]) {
			t.Errorf("pod %s is indexed under %v, which is not among the application's %v", p.Name, got, want)
		}
	}

	a.Status.DriverInfo.PodName = "pi-7f9c-driver"
	if got := integ.JobPodOwnersIndex(a); got[1] != "Pod/pi-7f9c-driver" {
		t.Errorf("with the operator's driver pod name the owners are %v, want that pod", got)
	}
}

// TestEditAffinities: the placement reaches the driver's and the
// executors' affinity, which the operator's webhook sets on their pods, and
// their templates', which Spark makes them from otherwise; a template is
// read as the operator reads it and changes only where its affinity does.
func TestEditAffinities(t *testing.T) {
	placed := &corev1.Affinity{NodeAffinity: &corev1.NodeAffinity{RequiredDuringSchedulingIgnoredDuringExecution: &corev1.NodeSelector{
		NodeSelectorTerms: []corev1.NodeSelectorTerm{{MatchExpressions: []corev1.NodeSelectorRequirement{
			{Key: "pool", Operator: corev1.NodeSelectorOpNotIn, Values: []string{"a100"}}}}}}}}
	place := func(string, *corev1.Affinity) *corev1.Affinity { return placed.DeepCopy() }
	template := func(raw string) *runtime.RawExtension { return &runtime.RawExtension{Raw: []byte(raw)} }
	cases := map[string]struct {
		driverTemplate *runtime.RawExtension
		wantPaths      []string
		wantTemplate   string // the driver's template after, as JSON; empty: none
		wantPatch      string
		wantOverridden []string
	}{
		"no template: the affinity the webhook sets": {
			wantPaths: []string{"spec.driver.affinity"},
			wantPatch: `{"spec":{"driver":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}}}}}`,
		},
		"a template's affinity too, the rest of it kept": {
			driverTemplate: template(`{"spec":{"containers":[{"name":"spark-kubernetes-driver","image":"spark"}],"affinity":{"podAntiAffinity":{}}}}`),
			wantPaths:      []string{"spec.driver.affinity", "spec.driver.template.spec.affinity"},
			wantTemplate: `{"metadata":{},"spec":{"containers":[{"name":"spark-kubernetes-driver","image":"spark","resources":{}}],` +
				`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}}}}`,
			wantPatch: `{"spec":{"driver":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}},` +
				`"template":{"metadata":{},"spec":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}},"podAntiAffinity":null},"containers":[{"image":"spark","name":"spark-kubernetes-driver","resources":{}}]}}}}}`,
		},
		// Go reads "Affinity" as affinity: so does the operator.
		"an affinity under another case is the template's affinity": {
			driverTemplate: template(`{"spec":{"Affinity":{"nodeAffinity":{}}}}`),
			wantPaths:      []string{"spec.driver.affinity", "spec.driver.template.spec.affinity"},
			wantTemplate: `{"metadata":{},"spec":{"containers":null,` +
				`"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}}}}`,
			wantPatch: `{"spec":{"driver":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}},` +
				`"template":{"metadata":{},"spec":{"Affinity":null,"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}},"containers":null}}}}}`,
		},
		"a template that is not a pod template is reported": {
			driverTemplate: template(`{"spec":"everywhere"}`),
			wantPaths:      []string{"spec.driver.affinity"},
			wantTemplate:   `{"spec":"everywhere"}`,
			wantPatch:      `{"spec":{"driver":{"affinity":{"nodeAffinity":{"requiredDuringSchedulingIgnoredDuringExecution":{"nodeSelectorTerms":[{"matchExpressions":[{"key":"pool","operator":"NotIn","values":["a100"]}]}]}}}}}}`,
			wantOverridden: []string{"spec.driver.template (not a pod template: json: cannot unmarshal string into Go struct field PodTemplateSpec.spec of type v1.PodSpec)"},
		},
	}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			app := extensionstest.MakeSparkApplication("pi", "ns").Obj()
			app.Spec.Driver.Template = tc.driverTemplate
			orig := app.DeepCopy()
			a := (*Application)(app)

			// An edit that changes nothing changes nothing.
			a.EditAffinities(DriverPodSet, func(_ string, aff *corev1.Affinity) *corev1.Affinity { return aff })
			if diff := cmp.Diff(orig, app); diff != "" {
				t.Errorf("an edit changing nothing changed (-want +got):\n%s", diff)
			}

			var paths []string
			overridden := a.EditAffinities(DriverPodSet, func(path string, aff *corev1.Affinity) *corev1.Affinity {
				paths = append(paths, path)
				return place(path, aff)
			})
			if diff := cmp.Diff(tc.wantPaths, paths); diff != "" {
				t.Errorf("paths (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantOverridden, overridden); diff != "" {
				t.Errorf("overridden (-want +got):\n%s", diff)
			}
			if tc.wantTemplate != "" {
				if diff := cmp.Diff(tc.wantTemplate, string(app.Spec.Driver.Template.Raw)); diff != "" {
					t.Errorf("template (-want +got):\n%s", diff)
				}
			}
			patch, err := client.MergeFrom(orig).Data(app)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.wantPatch, string(patch)); diff != "" {
				t.Errorf("patch (-want +got):\n%s", diff)
			}
		})
	}

	app := (*Application)(extensionstest.MakeSparkApplication("pi", "ns").Obj())
	var paths []string
	app.EditAffinities(ExecutorPodSet, func(path string, aff *corev1.Affinity) *corev1.Affinity { paths = append(paths, path); return aff })
	app.EditAffinities("other", func(path string, aff *corev1.Affinity) *corev1.Affinity { paths = append(paths, path); return aff })
	if diff := cmp.Diff([]string{"spec.executor.affinity"}, paths); diff != "" {
		t.Errorf("paths of the executors and another pod set (-want +got):\n%s", diff)
	}
}
