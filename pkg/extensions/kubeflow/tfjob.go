package kubeflow

import (
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// TFJobIntegration is the TFJob extension, enabled by the name "tfjob". A
// TFJob's unit is named after it with the suffix "-tf-qu".
func TFJobIntegration() framework.Integration {
	return framework.Integration{
		Name:        "tfjob",
		GVK:         kftraining.SchemeGroupVersion.WithKind(kftraining.TFJobKind),
		UnitSuffix:  "-tf-qu",
		NewJob:      func() framework.GenericJob { return NewTFJob(&kftraining.TFJob{}) },
		AddToScheme: kftraining.AddToScheme,
		PodSetOf:    podSetOfPod,
	}
}

// NewTFJob is j as the queue sees it.
func NewTFJob(j *kftraining.TFJob) framework.GenericJob {
	return &trainingJob{obj: j, replicas: &j.Spec.TFReplicaSpecs, runPolicy: &j.Spec.RunPolicy, status: &j.Status}
}
