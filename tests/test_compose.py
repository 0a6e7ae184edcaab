"""docker-compose.yml gives a real MongoDB; README and .env.example point at it the same way."""

from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
URI = "mongodb://localhost:27017/?directConnection=true"


def compose():
    return yaml.safe_load((ROOT / "docker-compose.yml").read_text())


def test_compose_runs_atlas_local_with_healthcheck_and_volume():
    services = compose()["services"]
    assert list(services) == ["mongodb"]
    mongo = services["mongodb"]
    assert mongo["image"].startswith("mongodb/mongodb-atlas-local")
    assert "27017:27017" in mongo["ports"]
    assert "mongosh" in " ".join(mongo["healthcheck"]["test"])
    mounts = {v.split(":")[1] for v in mongo["volumes"]}
    assert "/data/db" in mounts
    named = {v.split(":")[0] for v in mongo["volumes"]}
    assert named <= set(compose()["volumes"])


def test_readme_and_env_example_match_the_compose_port():
    readme = (ROOT / "README.md").read_text()
    env_example = (ROOT / ".env.example").read_text()
    assert "docker compose up -d" in readme
    assert URI in readme and URI in env_example
    port = compose()["services"]["mongodb"]["ports"][0].split(":")[0]
    assert f"localhost:{port}" in URI
