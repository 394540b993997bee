"""``OTEL_LOOPGUARD_*`` names, for the ``opentelemetry_environment_variables`` entry point.

``opentelemetry-instrument`` turns every module attribute named ``OTEL_*`` of this entry
point into a flag (``OTEL_LOOPGUARD_MODE`` -> ``--loopguard_mode``) and sets the variable
from the flag before the program starts. The names come from the one configuration model,
so every setting has its flag and none can drift.
"""

from __future__ import annotations

from otel_loopguard.engine.config import LoopGuardConfig

OTEL_LOOPGUARD_ENABLED = LoopGuardConfig.env_name("enabled")
OTEL_LOOPGUARD_MODE = LoopGuardConfig.env_name("mode")
OTEL_LOOPGUARD_POLICY = LoopGuardConfig.env_name("policy")
OTEL_LOOPGUARD_CAPTURE_CONTENT = LoopGuardConfig.env_name("capture_content")

#: every variable the configuration reads
ALL_VARIABLES: tuple[str, ...] = tuple(
    LoopGuardConfig.env_name(name) for name in LoopGuardConfig.model_fields
)

# one module attribute per variable, named as the variable (what opentelemetry-instrument reads)
globals().update({name: name for name in ALL_VARIABLES})
