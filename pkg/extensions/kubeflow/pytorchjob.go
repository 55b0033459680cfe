package kubeflow

import (
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// PyTorchJobIntegration is the PyTorchJob extension, enabled by the name
// "pytorchjob". A PyTorchJob's unit is named after it with the suffix "-py-qu".
func PyTorchJobIntegration() framework.Integration {
	return framework.Integration{
		Name:        "pytorchjob",
		GVK:         kftraining.SchemeGroupVersion.WithKind(kftraining.PyTorchJobKind),
		UnitSuffix:  "-py-qu",
		NewJob:      func() framework.GenericJob { return NewPyTorchJob(&kftraining.PyTorchJob{}) },
		AddToScheme: kftraining.AddToScheme,
		PodSetOf:    podSetOfPod,
	}
}

// NewPyTorchJob is j as the queue sees it.
func NewPyTorchJob(j *kftraining.PyTorchJob) framework.GenericJob {
	return &trainingJob{obj: j, replicas: &j.Spec.PyTorchReplicaSpecs, runPolicy: &j.Spec.RunPolicy, status: &j.Status}
}
