"""Mitigation strategies, one module each, registered by name; importing this package registers them all."""

from railsweep.strategies import all_zero, identity  # noqa: F401
from railsweep.strategies.base import (  # noqa: F401
    DecodeSettings,
    EvalContext,
    QuestionOutcome,
    build_strategy,
    known_strategies,
    make_config,
)

# Registered by their own modules; each line is one strategy.
from railsweep.strategies.lne_blocking import LNEBlocking as _lne_blocking  # noqa: F401,E402
from railsweep.strategies.railcap import strategy as _railcap  # noqa: F401,E402
from railsweep.strategies.shortcut import strategy as _shortcut  # noqa: F401,E402
from railsweep.strategies.ted import TED as _ted  # noqa: F401,E402
from railsweep.strategies.temperature import Temperature as _temperature  # noqa: F401,E402
