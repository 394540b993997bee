"""Every shipped Collector configuration is accepted by the built Collector, whose
distribution holds exactly the components those configurations use, and the ``debug`` and
OTLP/HTTP exporters (to look at what arrives, to send to an HTTP-only backend): a component
added to a shipped file without the distribution, or left in the distribution unused,
shows here."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from .configs import shipped_collector_configs

CONFIGS = shipped_collector_configs()
SECTIONS = ("receivers", "processors", "exporters", "extensions")
#: exporter names of the configurations -> the names the Collector lists them by (v0.161.0)
ALIASES = {"otlp": "otlp_grpc", "otlphttp": "otlp_http"}


def _validate(binary: Path, config: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(binary), "validate", f"--config={config}"],
        capture_output=True,
        text=True,
        timeout=60,
    )


def test_the_shipped_collector_configurations_are_found() -> None:
    names = {path.name for path in CONFIGS}
    assert {"otel-collector.yaml", "serve-replicas.yaml"} <= names


@pytest.mark.parametrize("config", CONFIGS, ids=lambda path: path.name)
def test_the_built_collector_validates_the_shipped_configuration(
    collector_binary: Path, config: Path
) -> None:
    done = _validate(collector_binary, config)
    assert done.returncode == 0, done.stderr


def test_validate_refuses_a_component_the_distribution_lacks(
    collector_binary: Path, tmp_path: Path
) -> None:
    """What makes the test above mean something: validate does check the components."""
    config = yaml.safe_load(CONFIGS[0].read_text())
    config["exporters"]["kafka"] = {}
    config["service"]["pipelines"]["traces"]["exporters"].append("kafka")
    broken = tmp_path / "broken.yaml"
    broken.write_text(yaml.safe_dump(config))
    done = _validate(collector_binary, broken)
    assert done.returncode != 0
    assert "kafka" in done.stderr


def test_the_distribution_holds_exactly_the_components_the_configurations_use(
    collector_binary: Path,
) -> None:
    listed = yaml.safe_load(
        subprocess.run(
            [str(collector_binary), "components"],
            capture_output=True,
            text=True,
            timeout=60,
            check=True,
        ).stdout
    )
    built = {section: {item["name"] for item in listed.get(section) or []} for section in SECTIONS}
    used: dict[str, set[str]] = {section: set() for section in SECTIONS}
    for path in CONFIGS:
        config = yaml.safe_load(path.read_text())
        for section in SECTIONS:
            used[section] |= {name.split("/")[0] for name in config.get(section) or {}}
    # the names the configurations write are the deprecated aliases the Collector still
    # accepts (validated above), so the files work with older contrib Collectors too
    used["exporters"] = {ALIASES.get(name, name) for name in used["exporters"]}
    # beyond the configurations: debug, to look at what arrives, and OTLP/HTTP, for a
    # backend that takes only HTTP
    used["exporters"] |= {"debug", "otlp_http"}
    assert built == used
