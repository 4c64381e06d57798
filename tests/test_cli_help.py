"""A command line that teaches itself: commands grouped by what a person wants, every option with help and its
default, examples at the end of every command's --help that use only options the command has."""

from __future__ import annotations

import argparse
import shlex

import pytest

from railsweep import cli


def _commands() -> dict[str, argparse.ArgumentParser]:
    parser = cli.make_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def _nested(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            return dict(action.choices)
    return {}


def _all_parsers():
    for name, parser in _commands().items():
        yield name, parser
        for nested_name, nested in _nested(parser).items():
            yield f"{name} {nested_name}", nested


def test_railsweep_help_lists_every_command_once_under_its_group():
    text = cli.make_parser().format_help()
    listing = text[text.index("commands:") :]
    for group in cli.GROUPS:
        assert f"  {group}:" in listing
    for name in cli.COMMANDS:
        assert sum(line.split()[:1] == [name] for line in listing.splitlines()) == 1, name
    for name in cli.COMMANDS:
        module = cli._load(name)
        assert getattr(module, "GROUP", None) in cli.GROUPS, name


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_command_help_ends_with_two_or_three_examples_of_itself(name):
    help_text = _commands()[name].format_help()
    examples = help_text[help_text.index("\nexamples:\n") :].strip().splitlines()[1:]
    starts = [line for line in examples if line.startswith(f"  railsweep {name}")]
    assert 2 <= len(starts) <= 3, examples


@pytest.mark.parametrize("name", cli.COMMANDS)
def test_every_example_uses_only_options_its_command_has(name):
    parser = _commands()[name]
    for example in cli._load(name).EXAMPLES:
        lexer = shlex.shlex(example.replace("\\\n", " "), posix=True)
        lexer.whitespace_split, lexer.commenters = True, "#"
        words = list(lexer)
        assert words[:2] == ["railsweep", name], example
        target = _nested(parser).get(words[2], parser) if len(words) > 2 else parser
        for word in words[2:]:
            if word.startswith("--"):
                assert word.split("=")[0] in target._option_string_actions, (example, word)


def test_every_option_of_every_command_has_help_and_shows_its_default():
    missing, hidden = [], []
    for name, parser in _all_parsers():
        for action in parser._actions:
            if isinstance(action, (argparse._HelpAction, argparse._SubParsersAction)):
                continue
            if not action.help:
                missing.append(f"{name} {'/'.join(action.option_strings) or action.dest}")
        text = parser.format_help()
        for action in parser._actions:
            if isinstance(action, argparse._HelpAction):
                continue
            default = action.default
            shown = isinstance(default, (int, float, str)) and not isinstance(default, bool) and default != ""
            if action.option_strings and shown and action.help and "default" not in action.help.lower():
                if f"(default: {default})" not in " ".join(text.split()):
                    hidden.append(f"{name} {action.option_strings[0]}={default}")
    assert not missing, f"options without help: {missing}"
    assert not hidden, f"defaults not shown: {hidden}"


def test_eval_without_a_harness_task_reads_256_tokens_unless_told():
    from railsweep.commands.eval import DEFAULT_MAX_NEW_TOKENS, response_budget

    parser = cli.make_parser(["eval"])
    base = ["eval", "--model", "m", "--task-dir", "d", "--strategy", "identity", "--out", "o"]
    assert response_budget(parser.parse_args(base)) == DEFAULT_MAX_NEW_TOKENS == 256
    assert response_budget(parser.parse_args([*base, "--max-new-tokens", "32"])) == 32
