"""The principal a client presents, and denials said as operation, resource and principal."""

from __future__ import annotations

from pathlib import Path

import trustme

from mirror_sink.core.clients.authorization import AuthorizationFailure, denial, principal_of


def test_the_principal_is_the_sasl_user_or_the_certificate_subject_or_anonymous(tmp_path: Path) -> None:
    assert principal_of({"security.protocol": "SASL_SSL", "sasl.username": "mirror"}) == "User:mirror"
    leaf = trustme.CA().issue_cert("mirror.client", common_name="mirror")
    cert = tmp_path / "client.pem"
    cert.write_bytes(leaf.cert_chain_pems[0].bytes())
    tls = principal_of({"security.protocol": "SSL", "ssl.certificate.location": str(cert)})
    assert tls.startswith("User:CN=mirror,OU=") and "mapping.rules" in tls
    assert principal_of({"bootstrap.servers": "b:9092"}) == "User:ANONYMOUS"
    # A SASL user only counts over SASL: a leftover sasl.username does not make PLAINTEXT a user.
    assert principal_of({"security.protocol": "PLAINTEXT", "sasl.username": "x"}) == "User:ANONYMOUS"


def test_only_authorization_codes_become_denials_and_they_name_everything_needed_to_grant() -> None:
    props = {"security.protocol": "SASL_SSL", "sasl.username": "mirror"}
    assert denial(6, "target", props, "WRITE", ["t"]) is None
    group = denial(30, "target", props, "READ", ["connect-m"])
    assert isinstance(group, AuthorizationFailure)
    assert str(group) == (
        "the target cluster denied READ on GROUP 'connect-m' to User:mirror; grant it with kafka-acls.sh --add "
        "--allow-principal User:mirror --operation Read --group 'connect-m'"
    )
    txn = denial(53, "target", props, "WRITE", ["m-w1-0"])
    assert txn is not None and "TRANSACTIONAL_ID 'm-w1-0'" in str(txn) and "--transactional-id 'm-w1-0'" in str(txn)
    configs = denial(29, "source", props, "DESCRIBE_CONFIGS", ["orders"], implied_by="ALTER_CONFIGS")
    assert configs is not None and "DESCRIBE_CONFIGS (or ALTER_CONFIGS, which implies it)" in str(configs)
    assert "--operation DescribeConfigs --topic 'orders'" in str(configs)
