package kubeflow

import (
	kftraining "github.com/kubeflow/training-operator/pkg/apis/kubeflow.org/v1"

	"github.com/koord-queue/koord-queue/pkg/extensions/framework"
)

// MPIJobIntegration is the kubeflow.org/v1 MPIJob extension, enabled by the
// name "mpijob". An MPIJob's unit is named after it with the suffix "-mpi-qu".
func MPIJobIntegration() framework.Integration {
	return framework.Integration{
		Name:        "mpijob",
		GVK:         kftraining.SchemeGroupVersion.WithKind(kftraining.MPIJobKind),
		UnitSuffix:  "-mpi-qu",
		NewJob:      func() framework.GenericJob { return NewMPIJob(&kftraining.MPIJob{}) },
		AddToScheme: kftraining.AddToScheme,
		PodSetOf:    podSetOfPod,
	}
}

// NewMPIJob is j as the queue sees it.
func NewMPIJob(j *kftraining.MPIJob) framework.GenericJob {
	return &trainingJob{obj: j, replicas: &j.Spec.MPIReplicaSpecs, runPolicy: &j.Spec.RunPolicy, status: &j.Status}
}
