"""The seed's utilities over grilly's one array type (docs/utils.md): GPU transfer names
(``to_vulkan``, ``from_vulkan``, ``VulkanTensor``, torch via DLPack), torch-style creation
helpers, the device manager, the HuggingFace bridge (BERT family, GPT-2); ``grilly.utils.data`` (torch's
datasets, samplers and DataLoader) and ``grilly.utils.checkpoint`` (activation checkpointing)."""
from . import checkpoint, data, tensor_conversion
from .devices import DeviceManager, get_device_manager, get_vulkan_backend
from .helpers import randn, tensor, zeros
from .hf_gpt2 import GPT2Config, GrillyGPT2LMHeadModel, GrillyGPT2Model
from .huggingface import BertConfig, GrillyBert, HuggingFaceBridge, get_huggingface_bridge
from .tensor_conversion import VulkanTensor, from_torch, from_vulkan, to_torch, to_vulkan

__all__ = ["BertConfig", "checkpoint", "data", "DeviceManager", "GPT2Config", "GrillyBert",
           "GrillyGPT2LMHeadModel", "GrillyGPT2Model", "HuggingFaceBridge",
           "VulkanTensor",
           "from_torch", "from_vulkan", "get_device_manager", "get_huggingface_bridge",
           "get_vulkan_backend", "randn", "tensor", "tensor_conversion", "to_torch", "to_vulkan",
           "zeros"]
