package admission

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
)

// benchPod is a Job's pod as the API server sends it once it runs on a
// node: labels, an owner, managed fields of four writers, a container with
// an environment and mounts, and a status with conditions.
func benchPod() *corev1.Pod {
	fields := func(manager, subresource string) metav1.ManagedFieldsEntry {
		return metav1.ManagedFieldsEntry{Manager: manager, Operation: metav1.ManagedFieldsOperationUpdate, APIVersion: "v1",
			FieldsType: "FieldsV1", Subresource: subresource,
			FieldsV1: &metav1.FieldsV1{Raw: []byte(`{"f:metadata":{"f:labels":{".":{},"f:batch.kubernetes.io/job-name":{},"f:controller-uid":{}},"f:ownerReferences":{".":{},"k:{\"uid\":\"8d9f\"}":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"work\"}":{".":{},"f:image":{},"f:name":{},"f:resources":{".":{},"f:requests":{".":{},"f:cpu":{}}}}}}}`)}}
	}
	return &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: "train-7-x8k2p", Namespace: "team-a", UID: "0f3c5d1e-5b1a-4d59-9c0f-2b7c1f0e8a11", ResourceVersion: "123456",
			Labels:      map[string]string{"batch.kubernetes.io/job-name": "train-7", "controller-uid": "8d9f", "quota.scheduling.koordinator.sh/name": "team-a"},
			Annotations: map[string]string{"koord-queue/related-queueunit": "train-7", "kwok.x-k8s.io/run-time": "30s"},
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: "train-7", UID: "8d9f",
				Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}},
			ManagedFields: []metav1.ManagedFieldsEntry{fields("kube-controller-manager", ""), fields("kube-scheduler", "binding"),
				fields("kwok", "status"), fields("koord-queue-controllers", "")},
		},
		Spec: corev1.PodSpec{
			NodeName: "kwok-node-17", RestartPolicy: corev1.RestartPolicyNever, ServiceAccountName: "default",
			Containers: []corev1.Container{{
				Name: "work", Image: "registry.example/train:v3", Command: []string{"python", "train.py", "--epochs", "10"},
				Env:          []corev1.EnvVar{{Name: "RANK", Value: "0"}, {Name: "WORLD_SIZE", Value: "8"}, {Name: "MASTER_ADDR", Value: "train-7-0"}},
				Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("1"), corev1.ResourceMemory: resource.MustParse("2Gi")}},
				VolumeMounts: []corev1.VolumeMount{{Name: "kube-api-access-x8k2p", MountPath: "/var/run/secrets/kubernetes.io/serviceaccount", ReadOnly: true}},
			}},
			Tolerations: []corev1.Toleration{{Key: "node.kubernetes.io/not-ready", Operator: corev1.TolerationOpExists, Effect: corev1.TaintEffectNoExecute, TolerationSeconds: ptr.To[int64](300)}},
		},
		Status: corev1.PodStatus{
			Phase: corev1.PodRunning, HostIP: "10.0.0.17", PodIP: "10.244.17.9",
			Conditions: []corev1.PodCondition{{Type: corev1.PodReady, Status: corev1.ConditionTrue}, {Type: corev1.PodScheduled, Status: corev1.ConditionTrue},
				{Type: corev1.PodInitialized, Status: corev1.ConditionTrue}, {Type: corev1.ContainersReady, Status: corev1.ConditionTrue}},
			ContainerStatuses: []corev1.ContainerStatus{{Name: "work", Ready: true, Image: "registry.example/train:v3",
				State: corev1.ContainerState{Running: &corev1.ContainerStateRunning{}}}},
		},
	}
}

// BenchmarkPodDecode is what the pod feed pays to read one pod of a watch
// event, by the media type it asks for (NewPodFeed asks for protocol
// buffers): decoding and cutting it to what the ledger keeps.
func BenchmarkPodDecode(b *testing.B) {
	for _, mediaType := range []string{runtime.ContentTypeJSON, runtime.ContentTypeProtobuf} {
		info, ok := runtime.SerializerInfoForMediaType(scheme.Codecs.SupportedMediaTypes(), mediaType)
		if !ok {
			b.Fatalf("no serializer for %s", mediaType)
		}
		data, err := runtime.Encode(scheme.Codecs.EncoderForVersion(info.Serializer, corev1.SchemeGroupVersion), benchPod())
		if err != nil {
			b.Fatal(err)
		}
		decoder := scheme.Codecs.WithoutConversion().DecoderToVersion(info.Serializer, corev1.SchemeGroupVersion)
		b.Run(mediaType, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				obj, err := runtime.Decode(decoder, data)
				if err != nil {
					b.Fatal(err)
				}
				if SlimPod(obj.(*corev1.Pod)).Spec.NodeName == "" {
					b.Fatal("the pod lost its node")
				}
			}
		})
	}
}
