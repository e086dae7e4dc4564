"""Credentials that name their issuer by a literal prefix, which detect-secrets has no plugin for.

Each row is printed without a keyword in logs and tool output (`kubectl get
secret -o yaml | base64 -d`, a CI log, an env dump), so the prefix is what
finds it. The formats are the issuers' published token formats, as the
gitleaks, betterleaks and Kingfisher catalogs spell them. `core/redaction.py`
runs every row on RE2 (`_token`): the literal, not glued to a word before it,
then `rest`; `bounded` rows may not be followed by another token character
(their length is exact).

Kept here, apart from the matcher, because it is a table that grows.
"""

from __future__ import annotations

__all__ = ["VENDOR_TOKENS"]

VENDOR_TOKENS: tuple[tuple[str, str, str, bool], ...] = (
    # (kind, literal prefix, the rest as an RE2 pattern, exact length)
    # Cloud.
    ("a GCP OAuth client secret", "GOCSPX-", r"[A-Za-z0-9_\-]{28}", True),
    ("an Alibaba Cloud access key id", "LTAI", r"[A-Za-z0-9]{12,20}", True),
    ("a Tencent Cloud secret id", "AKID", r"[A-Za-z0-9]{32}", True),
    ("a Cloudflare origin CA key", "v1.0-", r"[a-f0-9]{24}-[a-f0-9]{146}", True),
    ("a Heroku API key", "HRKU-", r"[A-Za-z0-9_\-]{20,}", False),
    ("a Scaleway access key", "SCW", r"[A-Z0-9]{17}", True),
    ("a Yandex Cloud API key", "AQVN", r"[A-Za-z0-9_\-]{35,38}", True),
    ("a Yandex Cloud IAM token", "t1.", r"[A-Za-z0-9_\-]+={0,2}\.[A-Za-z0-9_\-]{86}={0,2}", True),
    ("an Azure service bus key", "SharedAccessKey=", r"[A-Za-z0-9+/]{42,}={0,2}", False),
    # CI/CD and registries.
    ("a CircleCI token", "CCIPAT_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}", True),
    ("a CircleCI token", "CCIPRJ_", r"[A-Za-z0-9]{22}_[a-f0-9]{40}", True),
    ("a Buildkite token", "bkua_", r"[a-z0-9]{40}", True),
    ("a Docker Hub token", "dckr_pat_", r"[A-Za-z0-9_\-]{27}", True),
    ("a Docker Hub token", "dckr_oat_", r"[A-Za-z0-9_\-]{32}", True),
    ("a JFrog reference token", "cmVmdGtu", r"[A-Za-z0-9]{56}", True),
    ("a JFrog API key", "AKCp", r"[A-Za-z0-9]{69}", True),
    ("a SonarQube token", "squ_", r"[a-f0-9]{40}", True),
    ("a SonarQube token", "sqp_", r"[a-f0-9]{40}", True),
    ("a SonarQube token", "sqa_", r"[a-f0-9]{40}", True),
    ("a Bitbucket app password", "ATBB", r"[A-Za-z0-9_=.\-]{28,}", False),
    ("an Atlassian API token", "ATCTT3", r"[A-Za-z0-9_\-=]{20,}", False),
    ("a NuGet API key", "oy2", r"[a-z0-9]{43}", True),
    ("an Octopus Deploy key", "API-", r"[A-Z0-9]{26}", True),
    ("a Netlify token", "nfp_", r"[A-Za-z0-9]{36}", True),
    ("a Fly.io token", "fo1_", r"[A-Za-z0-9_\-]{43}", True),
    ("a Fly.io token", "FlyV1", r" fm[12]_[A-Za-z0-9+/=_\-]{40,}", False),
    ("a Render API key", "rnd_", r"[A-Za-z0-9]{32}", True),
    ("a Harness token", "pat.", r"[A-Za-z0-9_\-]{22}\.[a-f0-9]{24}\.[A-Za-z0-9]{20}", True),
    ("a Scalingo token", "tk-us-", r"[A-Za-z0-9_\-]{48}", True),
    ("a RubyGems key", "rubygems_", r"[a-f0-9]{48}", True),
    ("a Clojars token", "CLOJARS_", r"[a-z0-9]{60}", True),
    ("a PlanetScale token", "pscale_", r"(?:tkn|pw|oauth)_[A-Za-z0-9_.\-]{32,64}", True),
    ("a Prefect key", "pnu_", r"[A-Za-z0-9]{36}", True),
    ("a Tailscale key", "tskey-", r"(?:api|auth|client|webhook|scim)-[A-Za-z0-9]+-[A-Za-z0-9]+",
     False),
    ("a Sourcegraph token", "sgp_", r"(?:[a-f0-9]{16}_)?[a-f0-9]{40}", True),
    ("an Infracost key", "ico-", r"[A-Za-z0-9]{32}", True),
    # SaaS.
    ("a Sentry token", "sntryu_", r"[a-f0-9]{64}", True),
    ("a Sentry token", "sntrys_", r"eyJ[A-Za-z0-9+/=_\-]{40,}", False),
    ("a Grafana token", "glc_", r"[A-Za-z0-9+/]{32,400}={0,2}", False),
    ("a Grafana token", "glsa_", r"[A-Za-z0-9]{32}_[A-Fa-f0-9]{8}", True),
    ("a New Relic key", "NRAK-", r"[A-Z0-9]{27}", True),
    ("a New Relic key", "NRJS-", r"[a-f0-9]{19}", True),
    ("a New Relic key", "NRII-", r"[A-Za-z0-9_\-]{32}", True),
    ("a Postman key", "PMAK-", r"[a-f0-9]{24}-[a-f0-9]{34}", True),
    ("a Supabase token", "sbp_", r"[a-f0-9]{40}", True),
    ("a Supabase key", "sb_secret_", r"[A-Za-z0-9_\-]{31,}", False),
    ("a Figma token", "figd_", r"[A-Za-z0-9_\-]{40}", True),
    ("a 1Password service account token", "ops_", r"eyJ[A-Za-z0-9+/=_\-]{100,}", False),
    ("a 1Password secret key", "A3-",
     r"[A-Z0-9]{6}-(?:[A-Z0-9]{11}|[A-Z0-9]{6}-[A-Z0-9]{5})-[A-Z0-9]{5}-[A-Z0-9]{5}-[A-Z0-9]{5}",
     True),
    ("a Stripe webhook secret", "whsec_", r"[A-Za-z0-9+/=]{32,}", False),
    ("a Stripe key", "sk_test_", r"[A-Za-z0-9]{24,}", False),
    ("a Stripe key", "rk_test_", r"[A-Za-z0-9]{24,}", False),
    ("a Slack app token", "xapp-", r"\d-[A-Z0-9]+-\d+-[a-z0-9]+", False),
    ("a Discord webhook", "https://discord", r"(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_\-]{60,}",
     False),
    ("an Airtable token", "pat", r"[A-Za-z0-9]{14}\.[a-f0-9]{64}", True),
    ("a Pinecone key", "pcsk_", r"[A-Za-z0-9_]{40,}", False),
    ("a Mapbox secret token", "sk.eyJ", r"[A-Za-z0-9_\-]{50,}\.[A-Za-z0-9_\-]{20,}", False),
    ("a Dropbox token", "sl.", r"[A-Za-z0-9_\-]{130,}", False),
    ("a Square access token", "sq0atp-", r"[A-Za-z0-9_\-]{22}", True),
    ("a Square access token", "EAAA", r"[A-Za-z0-9_\-]{60}", True),
    ("a Contentful token", "CFPAT-", r"[A-Za-z0-9_\-]{43}", True),
    ("a Dynatrace token", "dt0c01.", r"[A-Z0-9]{24}\.[A-Z0-9]{64}", True),
    ("a Frame.io token", "fio-u-", r"[A-Za-z0-9_=\-]{64}", True),
    ("a Typeform token", "tfp_", r"[A-Za-z0-9_.=\-]{59}", True),
    ("a Replicate token", "r8_", r"[A-Za-z0-9]{37}", True),
    ("a Perplexity key", "pplx-", r"[A-Za-z0-9]{48}", True),
    ("a LangSmith key", "lsv2_", r"(?:pt|sk)_[a-f0-9]{32}_[a-f0-9]{10}", True),
    ("a ReadMe key", "rdme_", r"[a-z0-9]{70}", True),
    ("a Shippo token", "shippo_", r"(?:live|test)_[a-f0-9]{40}", True),
    ("an EasyPost key", "EZAK", r"[a-zA-Z0-9]{54}", True),
    ("a Duffel token", "duffel_", r"(?:test|live)_[A-Za-z0-9_\-=]{43}", True),
    ("a Flutterwave key", "FLWSECK", r"(?:_TEST)?-[a-h0-9]{32}-X", True),
    ("a Twitter bearer token", "AAAAAAAAAAAAAAAAAAAAA", r"[A-Za-z0-9%]{30,}", False),
    ("a Twitch token", "oauth:", r"[a-z0-9]{30}", True),
)  # fmt: skip
"""Rows in no particular order; the kind names the issuer as people know it."""
