"""Under ``opentelemetry-instrument``: which OpenAI instrumentors are on (ours, theirs).

BaseInstrumentor is one instance per class, so a new one is the one the entry point made."""

import json
import sys

from opentelemetry.instrumentation.openai_v2 import OpenAIInstrumentor as Theirs
from otel_loopguard_openai import OpenAIInstrumentor as Ours

print(
    json.dumps(
        {
            "ours": Ours().is_instrumented_by_opentelemetry,
            "theirs": Theirs().is_instrumented_by_opentelemetry,
        }
    ),
    file=sys.stderr,
)
