"""torch.cuda.memory of the stand-in: turning the allocator's history on,
as PyTorch's guide to debugging out-of-memory errors does."""
_recording = False


def _record_memory_history(enabled="all", **kwargs):
    global _recording
    _recording = enabled not in (None, False)
