package generator

import (
	"strconv"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/utils/ptr"

	"github.com/koord-queue/koord-queue/test/performance/runner"
	"github.com/koord-queue/koord-queue/test/performance/scenario"
)

func TestUnitDeclaresItsClassRunTime(t *testing.T) {
	for name, tc := range map[string]struct {
		class scenario.Class
		want  *int32
	}{
		"a class that declares 30s":         {class: scenario.DeclaredLong, want: ptr.To[int32](30)},
		"a class that declares nothing":     {class: scenario.Small},
		"the declared scenario's short one": {class: scenario.DeclaredShort, want: ptr.To[int32](10)},
	} {
		t.Run(name, func(t *testing.T) {
			u := Unit("q", tc.class, 1)
			if diff := cmp.Diff(tc.want, u.Spec.MaximumExecutionTimeSeconds); diff != "" {
				t.Errorf("spec.maximumExecutionTimeSeconds (-want +got):\n%s", diff)
			}
			if got, want := u.Labels[runner.LabelRuntime], strconv.FormatInt(tc.class.Runtime.Milliseconds(), 10); got != want {
				t.Errorf("runtime label %q, want %q: the runner ends it before its declared time", got, want)
			}
		})
	}
}
