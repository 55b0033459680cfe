package quota_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	elasticquotav1alpha1 "github.com/koord-queue/koord-queue/apis/elasticquota/v1alpha1"
	"github.com/koord-queue/koord-queue/pkg/quota"
	qt "github.com/koord-queue/koord-queue/pkg/quota/quotatest"
)

// koordQuota is Koordinator's CreateQuota (group_quota_manager_test.go): a
// quota under parent with max and min, allow-lent-resource and is-parent
// set, and its shared weight its max, as Koordinator's webhook fills it in.
func koordQuota(name, parent string, max, min corev1.ResourceList, lend, isParent bool) *elasticquotav1alpha1.ElasticQuota {
	weight, _ := json.Marshal(max)
	label := map[bool]string{true: "true", false: "false"}
	return &elasticquotav1alpha1.ElasticQuota{
		ObjectMeta: metav1.ObjectMeta{
			Name: name,
			Labels: map[string]string{
				elasticquotav1alpha1.LabelQuotaParent:       parent,
				elasticquotav1alpha1.LabelAllowLentResource: label[lend],
				elasticquotav1alpha1.LabelQuotaIsParent:     label[isParent],
			},
			Annotations: map[string]string{elasticquotav1alpha1.AnnotationSharedWeight: string(weight)},
		},
		Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: max, Min: min},
	}
}

// weighted sets a quota's shared-weight annotation as written.
func weighted(eq *elasticquotav1alpha1.ElasticQuota, weight string) *elasticquotav1alpha1.ElasticQuota {
	eq.Annotations[elasticquotav1alpha1.AnnotationSharedWeight] = weight
	return eq
}

// scaledMinQuotas are the quotas of Koordinator's
// TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota tests: p
// under the root with min 300, and its children a, b and c with min 100.
func scaledMinQuotas() []*elasticquotav1alpha1.ElasticQuota {
	max := qt.Res("cpu", "1000", "memory", "1000Gi")
	return []*elasticquotav1alpha1.ElasticQuota{
		koordQuota("p", "", max, qt.Res("cpu", "300", "memory", "300Gi"), true, true),
		koordQuota("a", "p", max, qt.Res("cpu", "100", "memory", "100Gi"), true, false),
		koordQuota("b", "p", max, qt.Res("cpu", "100", "memory", "100Gi"), true, false),
		koordQuota("c", "p", max, qt.Res("cpu", "100", "memory", "100Gi"), true, false),
	}
}

// TestKoordinatorCases runs Koordinator's own ElasticQuota test cases
// through the engine: each case is named for the Koordinator test its
// numbers come from (pkg/scheduler/plugins/elasticquota/core and
// pkg/webhook/elasticquota in koordinator-sh/koordinator), quotas built as
// that test builds them and read as koord-queue reads ElasticQuotas. A
// quota's request there (its pods' requests) is its units' here: what they
// hold (used) and what waits (requests). Koordinator's GigaByte is 1Gi; its
// createResourceList(cpu, memory) is cpu in cores, memory in bytes.
func TestKoordinatorCases(t *testing.T) {
	res := qt.Res
	cases := []struct {
		name     string
		capacity corev1.ResourceList
		quotas   []*elasticquotav1alpha1.ElasticQuota
		// used is what admitted units hold, requests what waiting units ask.
		used, requests map[string]corev1.ResourceList
		// update, when set, replaces a quota once the runtimes were read.
		update  *elasticquotav1alpha1.ElasticQuota
		want    map[string]map[string]string
		wantErr map[string]error
	}{
		{
			// Koordinator's calculator test works in milli-cores: total
			// 100m, weights 40m, 60m, 50m, 80m.
			name:     "TestRuntimeQuotaCalculator_IterationAdjustQuota/case1-no-guarantee",
			capacity: res("cpu", "100m"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				weighted(koordQuota("node1", "", res("cpu", "1"), res("cpu", "10m"), true, false), `{"cpu":"40m"}`),
				weighted(koordQuota("node2", "", res("cpu", "1"), res("cpu", "15m"), true, false), `{"cpu":"60m"}`),
				weighted(koordQuota("node3", "", res("cpu", "1"), res("cpu", "20m"), true, false), `{"cpu":"50m"}`),
				weighted(koordQuota("node4", "", res("cpu", "1"), res("cpu", "15m"), true, false), `{"cpu":"80m"}`),
			},
			requests: map[string]corev1.ResourceList{
				"node1": res("cpu", "5m"), "node2": res("cpu", "20m"), "node3": res("cpu", "40m"), "node4": res("cpu", "70m"),
			},
			want: map[string]map[string]string{
				"node1": {"cpu": "5m"}, "node2": {"cpu": "20m"}, "node3": {"cpu": "35m"}, "node4": {"cpu": "40m"},
			},
		},
		{
			// A weight of 0 in one resource; memory keeps the weight from
			// being all zero, which would read as no weight (below).
			name:     "TestRuntimeQuotaCalculator_IterationAdjustQuota/case2-node4.sharedWeight=0",
			capacity: res("cpu", "100m", "memory", "1"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				weighted(koordQuota("node1", "", res("cpu", "1", "memory", "1"), res("cpu", "10m"), true, false), `{"cpu":"40m","memory":"1"}`),
				weighted(koordQuota("node2", "", res("cpu", "1", "memory", "1"), res("cpu", "15m"), true, false), `{"cpu":"60m","memory":"1"}`),
				weighted(koordQuota("node3", "", res("cpu", "1", "memory", "1"), res("cpu", "20m"), true, false), `{"cpu":"50m","memory":"1"}`),
				weighted(koordQuota("node4", "", res("cpu", "1", "memory", "1"), res("cpu", "15m"), true, false), `{"cpu":"0","memory":"1"}`),
			},
			requests: map[string]corev1.ResourceList{
				"node1": res("cpu", "5m"), "node2": res("cpu", "20m"), "node3": res("cpu", "40m"), "node4": res("cpu", "70m"),
			},
			want: map[string]map[string]string{
				"node1": {"cpu": "5m"}, "node2": {"cpu": "20m"}, "node3": {"cpu": "40m"}, "node4": {"cpu": "15m"},
			},
		},
		{
			// Koordinator asserts that the 3 GPUs the donor lends all reach
			// the borrowers; its largest-remainder split gives them, on a
			// tie, to the first three by name.
			name:     "TestRuntimeQuotaCalculator_IterationAdjustQuota_IntegerDistribution",
			capacity: res("nvidia.com/gpu", "81"),
			quotas: func() []*elasticquotav1alpha1.ElasticQuota {
				gpu := func(n string) corev1.ResourceList { return res("nvidia.com/gpu", n) }
				qs := []*elasticquotav1alpha1.ElasticQuota{weighted(koordQuota("donor", "", gpu("100"), gpu("3"), true, false), `{"nvidia.com/gpu":"1"}`)}
				for i, min := range []string{"8", "8", "8", "8", "8", "8", "8", "8", "7", "7"} {
					qs = append(qs, weighted(koordQuota("borrower-0"+string(rune('0'+i)), "", gpu("100"), gpu(min), true, false), `{"nvidia.com/gpu":"1"}`))
				}
				return qs
			}(),
			requests: func() map[string]corev1.ResourceList {
				r := map[string]corev1.ResourceList{}
				for i := range 10 {
					r["borrower-0"+string(rune('0'+i))] = res("nvidia.com/gpu", "100")
				}
				return r
			}(),
			want: map[string]map[string]string{
				"donor":       {},
				"borrower-00": {"nvidia.com/gpu": "9"}, "borrower-01": {"nvidia.com/gpu": "9"}, "borrower-02": {"nvidia.com/gpu": "9"},
				"borrower-03": {"nvidia.com/gpu": "8"}, "borrower-04": {"nvidia.com/gpu": "8"}, "borrower-05": {"nvidia.com/gpu": "8"},
				"borrower-06": {"nvidia.com/gpu": "8"}, "borrower-07": {"nvidia.com/gpu": "8"},
				"borrower-08": {"nvidia.com/gpu": "7"}, "borrower-09": {"nvidia.com/gpu": "7"},
			},
		},
		{
			name:     "TestGroupQuotaManager_UpdateQuotaDeltaRequest",
			capacity: res("cpu", "96", "memory", "160Gi"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test1", "", res("cpu", "96", "memory", "160Gi"), res("cpu", "50", "memory", "80Gi"), true, false),
				koordQuota("test2", "", res("cpu", "96", "memory", "160Gi"), res("cpu", "40", "memory", "80Gi"), true, false),
			},
			requests: map[string]corev1.ResourceList{
				"test1": res("cpu", "120", "memory", "200Gi"), "test2": res("cpu", "150", "memory", "210Gi"),
			},
			want: map[string]map[string]string{
				"test1": {"cpu": "53", "memory": "80Gi"}, "test2": {"cpu": "43", "memory": "80Gi"},
			},
		},
		{
			name:     "TestGroupQuotaManager_RefreshAndGetRuntimeQuota_UpdateQuota/case5",
			capacity: res("cpu", "50", "memory", "50"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("1", "", res("cpu", "40", "memory", "40"), res("cpu", "10", "memory", "10"), true, true),
				koordQuota("2", "", res("cpu", "40", "memory", "40"), res("cpu", "0", "memory", "0"), true, false),
			},
			requests: map[string]corev1.ResourceList{"1": res("cpu", "30", "memory", "30"), "2": res("cpu", "30", "memory", "30")},
			want:     map[string]map[string]string{"1": {"cpu": "30", "memory": "30"}, "2": {"cpu": "20", "memory": "20"}},
		},
		{
			name:     "TestGroupQuotaManager_UpdateOneGroupMaxQuota_UpdateQuota/case1",
			capacity: res("cpu", "50", "memory", "50"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("1", "", res("cpu", "40", "memory", "40"), res("cpu", "10", "memory", "10"), true, true),
				koordQuota("2", "", res("cpu", "40", "memory", "40"), res("cpu", "10", "memory", "10"), true, false),
			},
			requests: map[string]corev1.ResourceList{"1": res("cpu", "35", "memory", "35"), "2": res("cpu", "35", "memory", "35")},
			want:     map[string]map[string]string{"1": {"cpu": "25", "memory": "25"}, "2": {"cpu": "25", "memory": "25"}},
		},
		{
			name:     "TestGroupQuotaManager_UpdateOneGroupMinQuota_UpdateQuota/case5",
			capacity: res("cpu", "50", "memory", "50"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("1", "", res("cpu", "40", "memory", "40"), res("cpu", "40", "memory", "40"), true, true),
				koordQuota("2", "", res("cpu", "40", "memory", "40"), res("cpu", "5", "memory", "5"), true, false),
			},
			requests: map[string]corev1.ResourceList{"1": res("cpu", "115", "memory", "115"), "2": res("cpu", "115", "memory", "115")},
			want:     map[string]map[string]string{"1": {"cpu": "40", "memory": "40"}, "2": {"cpu": "10", "memory": "10"}},
		},
		{
			name:     "TestGroupQuotaManager_NotAllowLentResource_2/no request",
			capacity: res("cpu", "100", "memory", "0"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test-root", "", res("cpu", "96", "memory", "0"), res("cpu", "60", "memory", "0"), false, true),
				koordQuota("test-child1", "test-root", res("cpu", "96", "memory", "0"), res("cpu", "20", "memory", "0"), false, false),
				koordQuota("test-child2", "test-root", res("cpu", "96", "memory", "0"), res("cpu", "20", "memory", "0"), false, false),
			},
			want: map[string]map[string]string{"test-root": {"cpu": "60"}, "test-child1": {"cpu": "20"}, "test-child2": {"cpu": "20"}},
		},
		{
			name:     "TestGroupQuotaManager_NotAllowLentResource_3/add 20 request",
			capacity: res("cpu", "100", "memory", "0"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test-root", "", res("cpu", "96", "memory", "0"), res("cpu", "60", "memory", "0"), true, true),
				koordQuota("test-child1", "test-root", res("cpu", "96", "memory", "0"), res("cpu", "20", "memory", "0"), false, false),
				koordQuota("test-child2", "test-root", res("cpu", "96", "memory", "0"), res("cpu", "20", "memory", "0"), true, false),
			},
			requests: map[string]corev1.ResourceList{"test-child1": res("cpu", "60")},
			want:     map[string]map[string]string{"test-root": {"cpu": "60"}, "test-child1": {"cpu": "60"}, "test-child2": {}},
		},
		{
			name:     "TestGroupQuotaManager_MultiUpdateQuotaRequest2/request > max",
			capacity: res("cpu", "96", "memory", "160Gi"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test1", "", res("cpu", "96", "memory", "160Gi"), res("cpu", "80", "memory", "80Gi"), true, true),
				koordQuota("test1-a", "test1", res("cpu", "60", "memory", "80Gi"), res("cpu", "50", "memory", "80Gi"), true, true),
				koordQuota("a-123", "test1-a", res("cpu", "30", "memory", "60Gi"), res("cpu", "20", "memory", "40Gi"), true, false),
			},
			requests: map[string]corev1.ResourceList{"a-123": res("cpu", "55", "memory", "75Gi")},
			want: map[string]map[string]string{
				"test1": {"cpu": "30", "memory": "60Gi"}, "test1-a": {"cpu": "30", "memory": "60Gi"}, "a-123": {"cpu": "30", "memory": "60Gi"},
			},
		},
		{
			name:     "TestGroupQuotaManager_MultiChildMaxGreaterParentMax",
			capacity: res("cpu", "350", "memory", "1800Gi"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test1", "", res("cpu", "300", "memory", "1024Gi"), res("cpu", "176", "memory", "756Gi"), true, true),
				koordQuota("test1-sub1", "test1", res("cpu", "500", "memory", "2048Gi"), res("cpu", "100", "memory", "512Gi"), true, false),
			},
			requests: map[string]corev1.ResourceList{"test1-sub1": res("cpu", "400", "memory", "1500Gi")},
			want:     map[string]map[string]string{"test1-sub1": {"cpu": "300", "memory": "1Ti"}},
		},
		// Mins scaled down to a small cluster, and the remainder.
		{
			// Koordinator asserts a and b; c is what its largest-remainder
			// split leaves (the tie goes to the first by name).
			name:     "TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota1",
			capacity: res("cpu", "200", "memory", "200Gi"),
			quotas:   scaledMinQuotas(),
			requests: map[string]corev1.ResourceList{
				"a": res("cpu", "200", "memory", "200Gi"), "b": res("cpu", "200", "memory", "200Gi"), "c": res("cpu", "200", "memory", "200Gi"),
			},
			want: map[string]map[string]string{
				"p": {"cpu": "200", "memory": "200Gi"},
				// 200Gi/3+1 and 200Gi/3 bytes.
				"a": {"cpu": "66667m", "memory": "71582788267"}, "b": {"cpu": "66667m", "memory": "71582788267"},
				"c": {"cpu": "66666m", "memory": "71582788266"},
			},
		},
		{
			name:     "TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota1/large",
			capacity: res("cpu", "600", "memory", "600Gi"),
			quotas:   scaledMinQuotas(),
			requests: map[string]corev1.ResourceList{
				"a": res("cpu", "200", "memory", "200Gi"), "b": res("cpu", "200", "memory", "200Gi"), "c": res("cpu", "200", "memory", "200Gi"),
			},
			want: map[string]map[string]string{
				"p": {"cpu": "600", "memory": "600Gi"},
				"a": {"cpu": "200", "memory": "200Gi"}, "b": {"cpu": "200", "memory": "200Gi"}, "c": {"cpu": "200", "memory": "200Gi"},
			},
		},
		{
			name:     "TestGroupQuotaManager_MultiUpdateQuotaRequest_WithScaledMinQuota2",
			capacity: res("cpu", "200", "memory", "200Gi"),
			quotas:   scaledMinQuotas(),
			requests: map[string]corev1.ResourceList{"a": res("cpu", "200", "memory", "200Gi"), "c": res("cpu", "200", "memory", "200Gi")},
			want: map[string]map[string]string{
				"p": {"cpu": "200", "memory": "200Gi"},
				"a": {"cpu": "100", "memory": "100Gi"}, "b": {}, "c": {"cpu": "100", "memory": "100Gi"},
			},
		},
		// An all-zero shared weight is no weight.
		{
			// TestGroupQuotaManager_QuotaAdd_AutoMakeUpScaleRatio2 reads
			// {"cpu":0,"memory":"0"} as the quota's max; here beside a
			// sibling of the same max, both asking for everything.
			name:     "TestGroupQuotaManager_QuotaAdd_AutoMakeUpScaleRatio2: an all-zero weight is the max",
			capacity: res("cpu", "100", "memory", "2000", "pods", "2000"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				weighted(koordQuota("test", "", res("cpu", "96", "memory", "1000", "pods", "1000"), nil, true, false), `{"cpu":0, "memory":"0"}`),
				koordQuota("sibling", "", res("cpu", "96", "memory", "1000", "pods", "1000"), nil, true, false),
			},
			requests: map[string]corev1.ResourceList{"test": res("cpu", "96"), "sibling": res("cpu", "96")},
			want:     map[string]map[string]string{"test": {"cpu": "50"}, "sibling": {"cpu": "50"}},
		},
		// A negative shared weight is refused.
		{
			name:    "TestQuotaTopology_basicItemCheck/annotation sharedWeight < 0",
			quotas:  []*elasticquotav1alpha1.ElasticQuota{weighted(koordQuota("temp", "", res("cpu", "0", "memory", "1048576"), nil, true, false), `{"cpu":"-1","memory":"1048576"}`)},
			wantErr: map[string]error{"temp": quota.ErrNegativeWeight},
		},
		// Only the resources max names.
		{
			name:     "TestGroupQuotaManager_UpdateQuotaInternalAndRequest/add ExtendedResourceKeyXCPU to node resource",
			capacity: res("cpu", "96", "memory", "160Gi", "x-cpu", "100"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test1", "", res("cpu", "64", "memory", "100Gi", "x-cpu", "100"), res("cpu", "60", "memory", "90Gi"), true, false),
			},
			requests: map[string]corev1.ResourceList{"test1": res("cpu", "120", "memory", "290Gi", "x-cpu", "80")},
			want:     map[string]map[string]string{"test1": {"cpu": "64", "memory": "100Gi", "x-cpu": "80"}},
		},
		{
			name:     "TestGroupQuotaManager_UpdateQuotaInternalAndRequest/delete max ExtendedResourceKeyXCPU",
			capacity: res("cpu", "96", "memory", "160Gi", "x-cpu", "100"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				koordQuota("test1", "", res("cpu", "64", "memory", "100Gi", "x-cpu", "100"), res("cpu", "60", "memory", "90Gi"), true, false),
			},
			requests: map[string]corev1.ResourceList{"test1": res("cpu", "120", "memory", "290Gi", "x-cpu", "80")},
			update:   koordQuota("test1", "", res("cpu", "64", "memory", "100Gi"), res("cpu", "60", "memory", "90Gi"), true, false),
			want:     map[string]map[string]string{"test1": {"cpu": "64", "memory": "100Gi"}},
		},
		// koordinator-default-quota and koordinator-system-quota.
		{
			name: "TestGroupQuotaManager_UpdateDefaultQuotaGroup",
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				{ObjectMeta: metav1.ObjectMeta{Name: elasticquotav1alpha1.DefaultQuotaName}, Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: res("cpu", "100", "memory", "1000")}},
			},
			want: map[string]map[string]string{elasticquotav1alpha1.DefaultQuotaName: {"cpu": "100", "memory": "1k"}},
		},
		{
			// Koordinator asserts the root's total less what the system and
			// default quotas use (60 cpu, 510Gi less 90 bytes); here it is
			// the runtime of a quota that asks for all of it.
			name:     "TestGroupQuotaManager_UpdateClusterTotalResource",
			capacity: res("cpu", "100", "memory", "540Gi"),
			quotas: []*elasticquotav1alpha1.ElasticQuota{
				{ObjectMeta: metav1.ObjectMeta{Name: elasticquotav1alpha1.SystemQuotaName}, Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: res("cpu", "1000", "memory", "1000Gi")}},
				{ObjectMeta: metav1.ObjectMeta{Name: elasticquotav1alpha1.DefaultQuotaName}, Spec: elasticquotav1alpha1.ElasticQuotaSpec{Max: res("cpu", "1000", "memory", "1000Gi")}},
				koordQuota("all", "", res("cpu", "1000", "memory", "1000Gi"), nil, true, false),
			},
			used: map[string]corev1.ResourceList{
				// 10 cpu and 30Gi, then 10 cpu and 30 bytes more.
				elasticquotav1alpha1.SystemQuotaName: res("cpu", "20", "memory", "32212254750"),
				// Twice 10 cpu and 30 bytes.
				elasticquotav1alpha1.DefaultQuotaName: res("cpu", "20", "memory", "60"),
			},
			requests: map[string]corev1.ResourceList{"all": res("cpu", "1000", "memory", "1000Gi")},
			want: map[string]map[string]string{
				"all":                                 {"cpu": "60", "memory": "547608330150"},
				elasticquotav1alpha1.SystemQuotaName:  {"cpu": "1k", "memory": "1000Gi"},
				elasticquotav1alpha1.DefaultQuotaName: {"cpu": "1k", "memory": "1000Gi"},
			},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			e := quota.NewEngine()
			if tc.capacity != nil {
				e.SetClusterCapacity(tc.capacity)
			}
			for _, eq := range tc.quotas {
				spec, err := quota.SpecFromElasticQuota(eq)
				if err != nil {
					t.Fatalf("SpecFromElasticQuota(%s): %v", eq.Name, err)
				}
				e.UpsertQuota(spec)
			}
			for q, used := range tc.used {
				if err := e.Charge(quota.Charge{Key: "used/" + q, Quota: q, Request: e.Vector(used), AdmitTime: time.Unix(0, 0)}); err != nil {
					t.Fatalf("Charge(%s): %v", q, err)
				}
			}
			for q, r := range tc.requests {
				e.AddPending(q, e.Vector(r))
			}
			if tc.update != nil {
				for q := range tc.want {
					e.Runtime(q)
				}
				spec, err := quota.SpecFromElasticQuota(tc.update)
				if err != nil {
					t.Fatalf("SpecFromElasticQuota(%s): %v", tc.update.Name, err)
				}
				e.UpsertQuota(spec)
			}
			if tc.want != nil {
				got := map[string]map[string]string{}
				for q := range tc.want {
					got[q] = str(e.Runtime(q))
				}
				if diff := cmp.Diff(tc.want, got); diff != "" {
					t.Errorf("Runtime (-want +got):\n%s", diff)
				}
			}
			for _, eq := range tc.quotas {
				if want, got := tc.wantErr[eq.Name], e.Err(eq.Name); !errors.Is(got, want) || (want == nil) != (got == nil) {
					t.Errorf("Err(%s) = %v, want %v", eq.Name, got, want)
				}
			}
		})
	}
}
