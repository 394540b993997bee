"""What framework packages import (beside the public face, :mod:`otel_loopguard`).

The pieces every instrumentation package of an agent framework needs, written once: the
gated tool wrapper, the model-turn wrapper, run-over-stream helpers, held-back interrupts,
the model-call span, the streamed answer and the OpenAI wire format.
"""
