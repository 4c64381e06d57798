"""The package's public names resolve, lazily: importing railsweep does not drag torch in."""

import subprocess
import sys


def test_public_names_resolve_and_bare_import_stays_light():
    code = (
        "import sys, railsweep\n"
        "assert 'torch' not in sys.modules, 'import railsweep pulled torch'\n"
        "for name in railsweep.__all__: getattr(railsweep, name)\n"
        "assert 'railcap' in railsweep.known_strategies()\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)


def test_unknown_public_name_is_an_attribute_error():
    import railsweep

    try:
        railsweep.no_such_name  # noqa: B018
    except AttributeError as e:
        assert "no_such_name" in str(e)
    else:
        raise AssertionError("expected AttributeError")
