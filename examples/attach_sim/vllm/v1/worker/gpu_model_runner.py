"""A stand-in for vLLM's GPUModelRunner: the class, its methods and this
module's path are vLLM's, so vramtrace's built-in phase rules name what
each allocates (weights, kv_cache, forward) from the frames PyTorch's
allocator history keeps; the memory comes from the torch stand-in."""
import time

import torch

MIB = 1 << 20


class GPUModelRunner:
    def __init__(self, layers=8):
        self.layers = layers
        self.weights = []
        self.kv_caches = []

    def load_model(self, weights_mib):
        per = weights_mib * MIB // self.layers
        self.weights = [torch.empty(per, device="cuda")
                        for _ in range(self.layers)]

    def profile_run(self, act_mib):
        """A dummy forward pass, freed and given back as vLLM does."""
        acts = self._activations(act_mib)
        del acts
        torch.cuda.empty_cache()

    def initialize_kv_cache(self, kv_mib):
        per = kv_mib * MIB // self.layers
        self.kv_caches = [torch.empty(per, device="cuda")
                          for _ in range(self.layers)]

    def _activations(self, act_mib):
        return [torch.empty(act_mib * MIB // 4, device="cuda")
                for _ in range(4)]

    def execute_model(self, act_mib, decode_s):
        """One request: its activations held while it decodes."""
        acts = self._activations(act_mib)
        time.sleep(decode_s)
        del acts
