"""`dg scaffold defs backfill_platform.components.Stream <name>`: a commented starting point."""

from __future__ import annotations

from importlib import resources

from dagster.components import Scaffolder, ScaffoldRequest, scaffold_with

__all__ = ["SpecScaffolder", "scaffold_with"]


class SpecScaffolder(Scaffolder):
    """Writes `defs.yaml` from the package's template of the component type, named after the folder
    (and, for a dataset, a `transform.py` beside it)."""

    def scaffold(self, request: ScaffoldRequest) -> None:
        kind = request.type_name.rsplit(".", 1)[-1].lower()
        template = resources.files("backfill_platform.components") / "templates" / f"{kind}.yaml"
        name = request.target_path.name
        request.target_path.mkdir(parents=True, exist_ok=True)
        text = template.read_text().replace("{{ name }}", name).replace("{{ type }}", request.type_name)
        (request.target_path / "defs.yaml").write_text(text)
        transform = template.with_name(f"{kind}_transform.py")
        if transform.is_file():  # a dataset starts with a transform module beside its spec
            (request.target_path / "transform.py").write_text(transform.read_text())
