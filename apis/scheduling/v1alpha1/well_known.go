package v1alpha1

// Keys users write on ElasticQuotas and Queues to tune a queue. Every
// koord-queue/* annotation of an ElasticQuota is copied onto its Queue.
const (
	// LabelQueuePolicy on an ElasticQuota chooses its Queue's policy.
	LabelQueuePolicy = "koord-queue/queue-policy"
	// AnnotationPriorityThreshold splits Intelligent's high and low bands (default 4).
	AnnotationPriorityThreshold = "koord-queue/priority-threshold"
	// AnnotationMaxDepth bounds how many units of a queue one scan considers.
	AnnotationMaxDepth = "koord-queue/max-depth"
	// AnnotationWaitForPodsRunning "true" allows one admitted-but-not-running unit at a time.
	AnnotationWaitForPodsRunning = "koord-queue/wait-for-pods-running"
	// AnnotationEnableQueueUnitPreemption "true" lets a unit evict lower-priority units of its quota.
	AnnotationEnableQueueUnitPreemption = "koord-queue/enable-queueunit-preemption"
	// AnnotationTopology on an ElasticQuota names the Topology whose levels
	// its units' pod sets may ask for (koord-queue/podset-required-topology,
	// koord-queue/podset-preferred-topology); a quota without it uses its
	// nearest ancestor's. On the ElasticQuotaProfile of a quota tree's root,
	// it names the Topology of the tree's quotas when none up to the root
	// does.
	AnnotationTopology = "koord-queue/topology"
	// AnnotationPrefix is what every copied annotation starts with.
	AnnotationPrefix = "koord-queue/"

	// QueueNamespace holds every Queue unless koord-queue is told another
	// (--queue-namespace, the chart's queueNamespace).
	QueueNamespace = "koord-queue"
	// DefaultQueuePriority is the priority of Queues created from ElasticQuotas.
	DefaultQueuePriority int32 = 1000
	// DefaultPriorityThreshold is Intelligent's default split.
	DefaultPriorityThreshold int32 = 4

	// AnnotationSuspend "true" on a Kubeflow job means it was submitted suspended.
	AnnotationSuspend = "scheduling.x-k8s.io/suspend"
	// AnnotationMinResources on an Argo Workflow is its request.
	AnnotationMinResources = "koord-queue/min-resources"
	// AnnotationReleasedBy on a job is the UID of the QueueUnit whose
	// admission last released it. A running job that carries it and has no
	// unit lost its unit while it ran: it is suspended and queued again.
	AnnotationReleasedBy = "koord-queue/released-by"
	// AnnotationJobDequeueTimestamp on a job is when its extension last
	// released it, in Go's time format "2006-01-02 15:04:05.999999999
	// -0700 MST" (Koord-Queue writes the same, followed by Go's monotonic
	// clock reading). The running timeout counts from it.
	AnnotationJobDequeueTimestamp = "koord-queue/job-dequeue-timestamp"
	// AnnotationHeldForOwner on a job that another queued job made and
	// that has no unit of its own (its unit's name is its maker's, with
	// unit names without suffix) is its maker's UID: the extension
	// suspended it while its maker's admission did not cover it, and
	// resumes it once it does.
	AnnotationHeldForOwner = "koord-queue/held-for-owner"
	// AnnotationInvalidJob on a unit says the extension holds it (spec.active
	// false) because its job cannot be queued as it is; its value says why.
	// The extension lifts the hold once the job is fixed.
	AnnotationInvalidJob = "koord-queue/invalid-job"
	// AnnotationPodSetOriginals on a unit keeps, while its job runs with the
	// pod set updates of the unit's admission checks, the scheduling
	// directives those updates replaced (a JSON map of pod set name to
	// labels, annotations, nodeSelector and tolerations), so that they can
	// be put back when the job is suspended again. The unit's own copy of the
	// templates cannot serve: the API server prunes a unit's template metadata.
	AnnotationPodSetOriginals = "koord-queue/pod-set-originals"
	// AnnotationJobMinParallelism on a batch Job is the fewest pods it can
	// run at once: when the Job does not fit whole, its unit may be admitted
	// with fewer pods, down to this many, and the Job released with that
	// parallelism (partial admission; Kueue's
	// kueue.x-k8s.io/job-min-parallelism).
	AnnotationJobMinParallelism = "koord-queue/job-min-parallelism"
	// AnnotationJobCompletionsEqualParallelism "true" on an Indexed batch Job
	// whose completions equal its parallelism keeps them equal under partial
	// admission: completions is lowered with parallelism (Kueue's
	// kueue.x-k8s.io/job-completions-equal-parallelism).
	AnnotationJobCompletionsEqualParallelism = "koord-queue/job-completions-equal-parallelism"
	// LabelMaxExecTimeSeconds on a job of any framework declares, in whole
	// seconds, the longest its QueueUnit may stay admitted:
	// koord-queue-controllers sets the unit's
	// spec.maximumExecutionTimeSeconds from it, at most koord-queue-controllers'
	// --max-declared-execution-time. It is a deadline as well as a forecast:
	// a unit admitted for longer is deactivated and evicted
	// (MaximumExecutionTimeExceeded) and its job suspended. A value that is
	// not a positive integer is ignored, with a Warning event
	// InvalidMaxExecTime on the job; one above the ceiling is cut to it, with
	// a Warning event MaxExecTimeCapped. Read while the job waits: a change
	// while its unit is admitted applies when the unit is queued again.
	LabelMaxExecTimeSeconds = "koord-queue/max-exec-time-seconds"
	// LabelMaxExecTimeSecondsKueue is Kueue's key for the same
	// (LabelMaxExecTimeSeconds), read when a job does not carry
	// koord-queue's.
	LabelMaxExecTimeSecondsKueue = "kueue.x-k8s.io/max-exec-time-seconds"
	// AnnotationOriginalParallelism on a batch Job released by a partial
	// admission is the parallelism it asked for; koord-queue-controllers
	// writes it with the lowered parallelism and puts the parallelism back
	// (removing it) when the Job is suspended again.
	AnnotationOriginalParallelism = "koord-queue/original-parallelism"
	// AnnotationOriginalMaxExecutors on a SparkApplication with dynamic
	// allocation released by a partial admission is the maxExecutors it
	// asked for; koord-queue-controllers writes it with maxExecutors lowered
	// to the executors admitted, and puts maxExecutors back (removing it)
	// when the application is suspended again.
	AnnotationOriginalMaxExecutors = "koord-queue/original-max-executors"
	// AnnotationQuotaRule on a QueueUnit says which rule chose the quota its
	// quota label names, when an extension set that label from the job's
	// namespace ("namespace name" or "namespaces annotation"): the label
	// pins the unit to that quota, and the rule stays visible.
	AnnotationQuotaRule = "koord-queue/quota-rule"
	// AnnotationRelatedQueueUnit on a pod template, set when its job is
	// released, names the job's QueueUnit as "<namespace>/<name>" (as
	// Koord-Queue v1.8 writes it): every pod made from the template is
	// that unit's, whatever owns it, so that its quota follows the pod.
	AnnotationRelatedQueueUnit = "koord-queue/related-queueunit"
	// AnnotationRelatedPodSet on a pod template, beside
	// AnnotationRelatedQueueUnit, names the unit's pod set it is made from.
	AnnotationRelatedPodSet = "koord-queue/related-podset-name"
	// SchedulingGateAdmission is the scheduling gate koord-queue-controllers'
	// pod webhook puts on a new pod of a queued job that its QueueUnit's
	// admission does not cover when it is created (the unit is not admitted
	// and its job released, its pod set has all the pods it was admitted
	// with, or the pod asks for more than each of them). The pod holds no
	// node while gated; koord-queue-controllers alone removes the gate, once
	// the admission covers the pod.
	SchedulingGateAdmission = "koord-queue.x-k8s.io/admission"
	// ArgoSuspendTemplate is the template that marks a Workflow as queued.
	ArgoSuspendTemplate = "koord-queue-suspend"
)
