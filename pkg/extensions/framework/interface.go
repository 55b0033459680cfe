package framework

import (
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/koord-queue/koord-queue/pkg/queueunit"
)

// GenericJob is one job of one framework, as the reconciler sees it. The
// reconciler reads the job into Object, asks it what it is, has it change
// itself, and writes Object back with a patch.
type GenericJob interface {
	// Object is the job itself. Suspend, Resume and changes to the templates
	// PodSets points at change it in place.
	Object() client.Object
	// IsSuspended reports whether the job holds its pods back.
	IsSuspended() bool
	// Suspend makes the job hold its pods back; the framework's controller
	// removes those that run.
	Suspend()
	// Resume releases the job.
	Resume()
	// PodSets lists the job's groups of identical pods in a stable order. A
	// template points into Object where the framework has one, so that the
	// reconciler can apply and restore scheduling directives in place. An error
	// means the job cannot be queued as it is (a malformed annotation, say);
	// it is shown to the user.
	PodSets() ([]PodSet, error)
	// Finished reports whether the job has ended, whether it succeeded, and
	// why, as its framework's controller says.
	Finished() (message string, success, finished bool)
	// Pods counts the job's running and pending pods by pod set name, as
	// its framework's controller reports them in the job's status. (Its pods
	// on nodes are counted from the pods: Integration.PodSetOf.)
	Pods() map[string]PodCount
}

// PodSet is a group of identical pods of a job.
type PodSet struct {
	// Name is a DNS label, unique within the job.
	Name string
	// Template points into the job where the framework keeps one.
	Template *corev1.PodTemplateSpec
	// Count is how many pods the set runs.
	Count int32
	// Added are containers the framework's operator adds to each pod it
	// makes from Template (KubeRay's autoscaler on a Ray head, its
	// wait-gcs-ready init container on a worker). The unit's template
	// carries them, so the unit asks for what the pods will and what
	// Koordinator charges; the job's own template is left as it is.
	Added AddedContainers
	// MadeUp marks a Template that is not the job's own: the framework
	// makes these pods from elsewhere (MadeUpPodSet), so changes to the
	// template reach none of them.
	MadeUp bool
	// MinCount, when set, is the fewest pods the set can start with: its
	// unit may then be admitted with fewer pods than Count (partial
	// admission). Only a job that implements JobWithPartialAdmission sets it.
	MinCount *int32
}

// AddedContainers are containers an operator adds to a pod template.
type AddedContainers struct {
	Containers, InitContainers []corev1.Container
}

// PodCount is how many pods of a pod set run and how many wait.
type PodCount = queueunit.PodCount

// JobWithPriority is a job that names its PriorityClass elsewhere than in
// its pod templates, such as a Kubeflow job's scheduling policy. An empty
// name falls back to the templates'. Only a PriorityClass gives a unit its
// priority (see resolvePriority).
type JobWithPriority interface {
	// PriorityClass is the class the job names, and the field that names
	// it (such as spec.runPolicy.schedulingPolicy.priorityClass), for the
	// warning of a class that gives no priority.
	PriorityClass() (name, field string)
}

// JobWithManagedCheck is a job that says by itself whether the queue
// manages it, whatever its labels and whether it was submitted suspended
// (an Argo Workflow with the koord-queue-suspend template). A managed job that
// runs without a unit is suspended until its unit is admitted.
type JobWithManagedCheck interface {
	IsManaged() bool
}

// JobWithWarnings is a job that can be queued but has something the user
// should fix or know about, such as an Argo Workflow without the
// koord-queue/min-resources annotation. Each warning becomes a Warning event
// and a line of the unit's message when the unit is created.
type JobWithWarnings interface {
	Warnings() []Warning
}

// Warning is a problem with a job that does not stop it being queued.
type Warning struct {
	// Reason is the event's reason, in CamelCase.
	Reason string
	// Message says what is wrong and how to fix it.
	Message string
}

// JobWithPartialAdmission is a job that can run fewer pods than it asks for,
// as Kueue's batch Job does: its unit may be admitted partially (PodSets set
// MinCount), and the reconciler releases it with the counts admitted and
// gives it back its own when it is suspended again.
type JobWithPartialAdmission interface {
	// RunWithCounts makes the job run counts[name] pods of each pod set
	// counts names, fewer than it asks for, keeping on the job what it
	// replaces (the first time), so that RestoreCounts can put it back.
	// PodSets goes on reporting the counts the job asks for.
	RunWithCounts(counts map[string]int32)
	// RestoreCounts puts back what RunWithCounts replaced and forgets it;
	// it reports whether the job changed.
	RestoreCounts() bool
}

// JobWithTemplateLock is a job whose pod templates cannot change at times:
// a batch Job's scheduling directives change only while it is suspended and
// has no start time. The reconciler unlocks a suspended job's templates
// (UnlockTemplates, written to the job's status) before it restores or
// updates them, and waits while they stay locked.
type JobWithTemplateLock interface {
	TemplatesLocked() bool
	// UnlockTemplates changes the suspended job's status so that its
	// templates can change (a batch Job's start time is cleared, which
	// Kubernetes keeps while a Job is suspended and sets afresh when it is
	// resumed).
	UnlockTemplates()
}

// JobWithMadeUpAffinity is a job whose made-up pod sets' pods (MadeUpPodSet)
// take their node affinity from fields of the job: an Argo Workflow's
// spec.affinity and its templates', a Spark application's driver and
// executor affinity, a RayJob's submitter template (made from KubeRay's
// default when it has none). The reconciler records, narrows and restores
// their required node affinity through it as it does a template's, so
// those pods keep to their quota's node pool too.
type JobWithMadeUpAffinity interface {
	// EditAffinities calls edit with each field the pods of made-up pod set
	// podSet take their affinity from, named by a path that stays the same
	// across reads of the job (such as spec.templates[main].affinity), and
	// its affinity (nil: none), and sets the field to what edit returns. An
	// edit that returns what it was given leaves the job as it was. It
	// returns what in the job can still give those pods another affinity,
	// which the reconciler cannot change (a podSpecPatch, a template of a
	// WorkflowTemplate), as paths; none for a pod set it knows nothing of.
	EditAffinities(podSet string, edit func(path string, affinity *corev1.Affinity) *corev1.Affinity) (overridden []string)
}

// JobWithPodSetsKoordQueueLeftOut is a job with pod sets Koord-Queue's
// extension leaves out of its units (a RayJob's submitter pod). A unit
// Koord-Queue made, taken over while it holds quota, is not outgrown by
// them: it is adopted, and its job runs on, without them, as it did
// before; once queued again the unit asks for them too.
type JobWithPodSetsKoordQueueLeftOut interface {
	PodSetsKoordQueueLeftOut() []string
}

// JobWithMadeJobs is a job whose unit asks for the pods of the jobs its
// framework makes for it, of the kinds Integration.Makes names (a RayJob's
// unit counts the RayCluster and the submitter Job KubeRay makes). It
// answers for them itself: they run within its admission while it is
// admitted, and the reconciler counts the pod sets of the jobs it controls
// as pod sets of its own (madeExcess), so that it is queued again, as one
// that grew, when a tenant scales them past its admission; its framework
// then makes them afresh from its spec. An owner that is not one of these
// covers the jobs it made only within its admission (see coveredByOwner).
type JobWithMadeJobs interface {
	// MadeKinds are empty objects of the kinds of jobs the framework makes
	// for the job, to list and read them into.
	MadeKinds() []client.Object
	// MadeSets are the pod sets of made, a job of one of MadeKinds the
	// job controls, named as the pod sets of the job they count in; none
	// while made runs no pod (suspended).
	MadeSets(made client.Object) ([]PodSet, error)
}
