"""Protocol names as people write them (issue 29, defect 5): case and separators do not matter,
the golden files' own spellings and ``ai-sdk@7`` are accepted, and an unknown name suggests the
nearest one, in the same words from the library, the CLI and the proxy's route config. Every
one of them goes through ``codecs.resolve``."""

from __future__ import annotations

import pytest

from streambridge import Translator, codecs
from streambridge.bridge import ConfigError, build_config

from .cli_support import GOLDEN, invoke, user_error

SPELLINGS = {
    "AI-SDK": "ai-sdk",
    "ai_sdk": "ai-sdk",
    "aisdk": "ai-sdk",
    "ai-sdk@7": "ai-sdk",
    "AI_SDK@6": "ai-sdk@6",
    "Nest": "nest",
    "ADONIS": "nest",
    "agui": "ag-ui",
    "AG_UI": "ag-ui",
    "agentfootprint-host": "agentfootprint:host",  # the golden files' spelling
    "agentfootprint_host": "agentfootprint:host",
    "agentfootprint:host": "agentfootprint:host",
}


@pytest.mark.parametrize(("spelling", "name"), SPELLINGS.items())
def test_the_registry_resolves_every_spelling_to_one_codec(spelling: str, name: str) -> None:
    assert codecs.resolve(spelling) == name
    assert codecs.get(spelling) is codecs.get(name)


def test_the_translator_takes_any_spelling() -> None:
    data = (GOLDEN / "plain-text" / "oma.ndjson").read_bytes()
    assert Translator("oma", "agui").feed(data) == Translator("oma", "ag-ui").feed(data)


def test_an_unknown_name_is_a_value_error_that_suggests_the_nearest() -> None:
    with pytest.raises(
        ValueError, match=r"unknown protocol 'agoo' \(did you mean 'ag-ui'\? expected one of "
    ) as raised:
        Translator("oma", "agoo")
    assert isinstance(raised.value, codecs.UnknownProtocol) and not isinstance(raised.value, KeyError)
    assert raised.value.suggestion == "ag-ui"
    with pytest.raises(codecs.UnknownProtocol, match="did you mean 'agentfootprint:host'"):
        codecs.get("agentfootprint-hots")


def test_a_name_like_none_gets_no_suggestion_only_the_known_names() -> None:
    with pytest.raises(codecs.UnknownProtocol) as raised:
        codecs.get("klingon")
    assert raised.value.suggestion is None
    assert str(raised.value) == f"unknown protocol 'klingon' (expected one of {', '.join(codecs_known())})"


def codecs_known() -> list[str]:
    return [*codecs.names(), *(alias for name in codecs.names() for alias in codecs.aliases(name))]


def test_the_cli_takes_any_spelling_of_from_and_to() -> None:
    golden = GOLDEN / "plain-text" / "oma.ndjson"
    loose = invoke("convert", golden, "--from", "OMA", "--to", "AgUi")
    strict = invoke("convert", golden, "--from", "oma", "--to", "ag-ui")
    assert loose.exit_code == 0, loose.stderr
    assert loose.stdout_bytes == strict.stdout_bytes


def test_the_cli_says_the_libraries_words_after_its_option() -> None:
    result = invoke("convert", GOLDEN / "plain-text" / "oma.ndjson", "--to", "agoo")
    line = user_error(result, "--to: unknown protocol 'agoo'", "did you mean 'ag-ui'?")
    with pytest.raises(codecs.UnknownProtocol) as raised:
        codecs.get("agoo")
    assert line == f"streambridge: error: --to: {raised.value}"


def test_the_proxy_routes_take_any_spelling_and_say_the_same_words() -> None:
    config = build_config(upstream="http://127.0.0.1:3000/agent", source="Nest", target="AI_SDK", environ={})
    route = config.routes[0]
    assert (route.source, route.target) == ("nest", "ai-sdk")
    with pytest.raises(ConfigError, match=r"--to: unknown protocol 'agoo' \(did you mean 'ag-ui'\?"):
        build_config(upstream="http://127.0.0.1:3000/agent", source="nest", target="agoo", environ={})


def test_builtin_names_need_no_import_and_agree_with_their_codecs() -> None:
    for entry in codecs.BUILTIN:
        codec = codecs.get(entry.name)
        assert (codec.name, codec.aliases, codec.title) == (entry.name, entry.aliases, entry.title)
