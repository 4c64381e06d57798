"""A miniature world built beside the sweep, in a thread of the driver: a family's cells start as soon as its
models are trained, instead of waiting for the slowest family (neox, in ``mini``)."""

from __future__ import annotations

import queue
import threading
from pathlib import Path

from railsweep.miniworld.cache import World, cached_world, world_root
from railsweep.miniworld.presets import preset_config
from railsweep.miniworld.shipped import shipped_folder
from railsweep.miniworld.world import build_world


class StagedWorld:
    """The build of ``preset``'s world in a daemon thread; ``ready`` holds the families trained so far."""

    def __init__(self, preset: str, cache_dir: str | Path | None = None):
        self.preset = preset
        self.config = preset_config(preset)
        self.root = world_root(preset, cache_dir, self.config)
        self.ready: set[str] = set()
        self.data_ready = False
        self.world: World | None = None
        self.error: BaseException | None = None
        self._events: queue.Queue[str] = queue.Queue()
        self._thread = threading.Thread(target=self._run, args=(cache_dir,), name="railsweep-world", daemon=True)
        self._thread.start()

    def _run(self, cache_dir: str | Path | None) -> None:
        try:
            self.world = build_world(self.preset, cache_dir=cache_dir, on_ready=self._events.put)
        except BaseException as e:  # re-raised in the driver's thread by wait()
            self.error = e
        self._events.put("")  # the build is over (the empty name is no stage)

    @property
    def building(self) -> int:
        """Families still training (0 once the build is over)."""
        return 0 if self.world is not None else len(self.config.families) - len(self.ready)

    def wait(self, timeout: float | None = None) -> bool:
        """Block until the next stage lands (or ``timeout`` seconds); True when one did. A failed build raises
        here; a finished one marks every family ready (a world built by another process lands whole)."""
        try:
            stage = self._events.get(timeout=timeout)
        except queue.Empty:
            return False
        if stage == "data":
            self.data_ready = True
        elif stage:
            self.ready.add(stage)
        else:
            if self.error is not None:
                raise self.error
            self.data_ready = True
            self.ready.update(self.config.families)
        return True

    def wait_for_data(self) -> None:
        while not self.data_ready:
            self.wait()

    def provisional(self) -> World:
        """The world as it will be (its paths follow from its root), to resolve a spec before it is built."""
        if self.world is not None:
            return self.world
        return World(root=self.root, preset=self.preset, config=self.config,
                     families=list(self.config.families), data_dir=self.root / "data",
                     leak_split_path=self.root / "data" / "leak_split.json", manifest={})  # fmt: skip

    def result(self) -> World:
        """The finished world (blocks until the build is over)."""
        while self.world is None:
            self.wait()
        return self.world


def start_world(preset: str, cache_dir: str | Path | None = None) -> World | StagedWorld:
    """The cached world of ``preset``; else the build railsweep ships of it, installed now (seconds:
    :mod:`railsweep.miniworld.shipped`); else a :class:`StagedWorld` building it."""
    if (world := cached_world(preset, cache_dir)) is not None:
        return world
    if shipped_folder(preset_config(preset)) is not None:
        return build_world(preset, cache_dir=cache_dir)
    return StagedWorld(preset, cache_dir)


def free_cores(cpus: float, building: int) -> int:
    """Cores of ``cpus`` free of the build while ``building`` families train, one core each."""
    return max(0, int(cpus) - building)
