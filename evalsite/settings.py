"""Django settings for Concordia, read from environment variables.

With no variable set the app runs on *embedded defaults*: a SQLite file and a
serverless (filesystem) Celery broker under ``CONCORDIA_DATA_DIR`` (``./data``).
Production sets ``DATABASE_URL`` (PostgreSQL), ``CELERY_BROKER_URL`` (Redis),
``SECRET_KEY`` and ``DEBUG=false``.
"""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

import dj_database_url
from celery.schedules import schedule
from csp.constants import NONE, SELF
from django.core.exceptions import ImproperlyConfigured

from evalsite.env import env_bool, env_float, env_int, env_list, env_networks, env_str

BASE_DIR = Path(__file__).resolve().parent.parent
DATA_DIR = Path(env_str("CONCORDIA_DATA_DIR") or BASE_DIR / "data").resolve()
DATA_DIR.mkdir(parents=True, exist_ok=True)

DEBUG = env_bool("DEBUG", True)
_secret = env_str("SECRET_KEY")
if not _secret:
    if not DEBUG:
        raise ImproperlyConfigured("SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off.")
    _secret = "insecure-development-key-only-for-debug-mode"  # noqa: S105
# Django's own deploy check asks for 50 characters of which at least 5 differ.
SECRET_KEY_MIN_LENGTH = 50
if not DEBUG and (len(_secret) < SECRET_KEY_MIN_LENGTH or len(set(_secret)) < 5):
    raise ImproperlyConfigured(
        f"SECRET_KEY is too short: {len(_secret)} characters, at least {SECRET_KEY_MIN_LENGTH} "
        "(with at least 5 different ones) are needed when DEBUG is off. Generate one with "
        "python3 -c 'import secrets; print(secrets.token_urlsafe(50))'."
    )
SECRET_KEY = _secret
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]"] if DEBUG else [])
if not DEBUG and not ALLOWED_HOSTS:
    raise ImproperlyConfigured(
        "ALLOWED_HOSTS must be set when DEBUG is off (comma-separated host names)."
    )
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "axes",
    "django_htmx",
    "rest_framework",
    "rest_framework.authtoken",
    "django_filters",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "studies",
    "annotation",
    "learned",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    # under /api/: a query parameter given twice is a 400 (the schema gives each one value)
    "studies.api.middleware.SingleQueryValuesMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # Before anything reads a body: refuses a body past its route's limit with 413 while it
    # arrives (on Content-Length, or once a streamed body passes it): IMPORT_MAX_FILE_BYTES
    # on the upload routes, REQUEST_MAX_BODY_BYTES everywhere else.
    "studies.views.uploads.BodyLimitMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "django_htmx.middleware.HtmxMiddleware",
    # Vary: HX-Request on every HTML response (pages and their htmx partials share URLs).
    "studies.views.helpers.VaryOnHtmxMiddleware",
    "csp.middleware.CSPMiddleware",
    # Last, as django-axes asks: it turns a lockout signalled by its backend into a response.
    "axes.middleware.AxesMiddleware",
]

ROOT_URLCONF = "evalsite.urls"
WSGI_APPLICATION = "evalsite.wsgi.application"
ASGI_APPLICATION = "evalsite.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# --- database -------------------------------------------------------------------------
_database_url = env_str("DATABASE_URL") or f"sqlite:///{DATA_DIR / 'concordia.sqlite3'}"
# Health checks: a connection kept across requests (and tasks) is tested before its first
# use in each, so a database restart costs no request or task its first query.
DATABASES = {
    "default": dj_database_url.parse(_database_url, conn_max_age=60, conn_health_checks=True)
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # A file, not memory, so that a worker process sees what the tests commit.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test.sqlite3")}
    DATABASES["default"]["OPTIONS"] = {"timeout": 30, "transaction_mode": "IMMEDIATE"}
    DATABASES["default"]["CONN_MAX_AGE"] = 0
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTHENTICATION_BACKENDS = [
    # First: refuses a locked-out username and IP before the password is even checked.
    "axes.backends.AxesStandaloneBackend",
    "django.contrib.auth.backends.ModelBackend",
]
AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
]
LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "studies:home"
LOGOUT_REDIRECT_URL = "login"

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = Path(env_str("STATIC_ROOT") or BASE_DIR / "staticfiles")
MEDIA_ROOT = Path(env_str("MEDIA_ROOT") or DATA_DIR / "media")
STORAGES = {
    # Django's, except that a write that fails part-way (a full disk) removes its file
    "default": {"BACKEND": "studies.storage.UploadStorage"},
    "staticfiles": {
        "BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"
        if DEBUG
        else "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}
FILE_UPLOAD_MAX_MEMORY_SIZE = 2 * 1024 * 1024  # larger uploads spool to a temporary file
# ... here, on the file system of the uploads (moved into place, not copied), named after
# their host and process so that a process removes what dead ones left (views/uploads.py)
FILE_UPLOAD_TEMP_DIR = str(Path(env_str("FILE_UPLOAD_TEMP_DIR") or MEDIA_ROOT / "upload-tmp"))
Path(FILE_UPLOAD_TEMP_DIR).mkdir(parents=True, exist_ok=True)
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    "studies.views.uploads.SpoolHandler",
]
# The largest request body of every route but the upload routes (IMPORT_MAX_FILE_BYTES),
# anonymous ones included: refused with 413 before it is read (studies/views/uploads.py).
DATA_UPLOAD_MAX_MEMORY_SIZE = env_int("REQUEST_MAX_BODY_BYTES", 5 * 1024 * 1024, minimum=1024)

# --- security -------------------------------------------------------------------------
# HTTPS: the site is reached over TLS (directly or through a proxy that sets
# X-Forwarded-Proto). On by default in production; HTTPS=false for a plain-HTTP internal
# deployment, which turns off the redirect, HSTS and Secure cookies (each can also be set).
HTTPS = env_bool("HTTPS", not DEBUG)
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", HTTPS)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 365 * 24 * 3600 if HTTPS else 0, minimum=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", True)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", False)
if SECURE_HSTS_SECONDS and not SECURE_HSTS_PRELOAD:
    # Preloading asks browsers to hard-code HTTPS for the whole domain: the domain owner's
    # decision (hstspreload.org), not a default. Saying no is not a weakness of this site.
    SILENCED_SYSTEM_CHECKS = ["security.W021"]
SESSION_COOKIE_SECURE = env_bool("SECURE_COOKIES", HTTPS)
CSRF_COOKIE_SECURE = SESSION_COOKIE_SECURE
if not DEBUG:
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")

# Content security policy: scripts, styles and everything else only from this site (htmx
# is served from static files); no inline script, inline style or eval. Templates keep
# their behaviour in static/js and their looks in static/css.
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": [SELF],
        "script-src": [SELF],
        "style-src": [SELF],
        "img-src": [SELF, "data:"],
        "object-src": [NONE],
        "base-uri": [SELF],
        "form-action": [SELF],
        "frame-ancestors": [NONE],
    }
}

# The client's address, for every limiter (studies/throttling.py: client_address): the
# peer's, unless the peer is one of these reverse proxies, whose X-Forwarded-For is then
# believed. Empty: no proxy is trusted, and a forwarded header is ignored.
TRUSTED_PROXIES = env_networks("TRUSTED_PROXIES")

# Login throttling (django-axes): LOGIN_FAILURE_LIMIT failed logins for one username from
# one address lock that pair out for LOGIN_COOLOFF_MINUTES; LOGIN_ADDRESS_FAILURE_LIMIT
# from one address over all usernames (password spraying) lock the address out, the right
# password included. Staff reset either in the admin (Axes → Access attempts) or with
# `manage.py axes_reset` / `axes_reset_ip`. A success clears that username's count.
AXES_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 10, minimum=1)
AXES_COOLOFF_TIME = timedelta(minutes=env_int("LOGIN_COOLOFF_MINUTES", 15, minimum=1))
LOGIN_ADDRESS_FAILURE_LIMIT = env_int("LOGIN_ADDRESS_FAILURE_LIMIT", 30, minimum=1)
if LOGIN_ADDRESS_FAILURE_LIMIT < AXES_FAILURE_LIMIT:
    # Below it, one user's run of typos would lock their whole office out before their own
    # account lock took over.
    raise ImproperlyConfigured(
        f"LOGIN_ADDRESS_FAILURE_LIMIT={LOGIN_ADDRESS_FAILURE_LIMIT} must be at least "
        f"LOGIN_FAILURE_LIMIT={AXES_FAILURE_LIMIT}."
    )
AXES_LOCKOUT_PARAMETERS = [["username", "ip_address"]]
AXES_HANDLER = "studies.throttling.LoginLockoutHandler"  # adds the per-address lock
AXES_CLIENT_IP_CALLABLE = "studies.throttling.client_address"
AXES_RESET_ON_SUCCESS = True
AXES_LOCKOUT_TEMPLATE = "registration/locked_out.html"
AXES_LOCKOUT_CALLABLE = "studies.throttling.lockout_response"  # says which lock holds
AXES_USERNAME_FORM_FIELD = "username"
AXES_VERBOSE = False  # no start-up banner on every command's and worker's stderr

# --- Celery ---------------------------------------------------------------------------
_broker_dir = DATA_DIR / "broker"
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL") or "filesystem://"


def _redis_db(number: int) -> str:
    """Database ``number`` of the broker's Redis server ("" when the broker is not Redis)."""
    if not CELERY_BROKER_URL.startswith("redis"):
        return ""
    return CELERY_BROKER_URL.rsplit("/", 1)[0] + f"/{number}"


if CELERY_BROKER_URL.startswith("filesystem://"):
    # kombu's filesystem transport with whole messages and one reader each (evalsite/broker.py)
    CELERY_BROKER_TRANSPORT = "evalsite.broker:Transport"
    for sub in ("queue", "processed", "control"):
        (_broker_dir / sub).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "processed_folder": str(_broker_dir / "processed"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
    }
    _default_backend = f"file://{DATA_DIR / 'results'}"
    (DATA_DIR / "results").mkdir(exist_ok=True)
else:
    # A metric run can take hours; with acks_late a shorter visibility timeout would hand the
    # same message to a second worker (harmless, runs are claimed once, but wasteful).
    CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": 12 * 3600}
    _default_backend = _redis_db(1)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND") or _default_backend or None
CELERY_RESULT_EXPIRES = 3600
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
CELERY_TASK_ACKS_LATE = True  # a worker killed mid-task leaves the message for another
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = "light"
# Queues: `gpu` model-based runs; `cpu` BERTScore and CPU training (the model worker
# serves both); `quick` the short model-free metrics (ROUGE, BLEU, chrF, length, random),
# served by a worker of its own so that they never wait behind a model run; `light` imports and computed pages (matrices, diagnostics, plans,
# agreement), served by a worker of its own so that they never wait behind model work;
# `io` runs on served endpoints and their probes (a light worker, no model);
# `maintenance` the sweeper alone, served by a light worker that runs beat and never a
# long task, so that recovery never waits behind the work it recovers
# (evalsite/celery.py: local_workers; docker/compose.yml).
CELERY_TASK_ROUTES = {
    "studies.tasks.run_metric": {"queue": "gpu"},
    "studies.tasks.generate_steps": {"queue": "gpu"},
    "studies.tasks.run_metric_cpu": {"queue": "cpu"},
    "studies.tasks.run_metric_quick": {"queue": "quick"},
    "studies.tasks.run_metric_io": {"queue": "io"},
    "studies.tasks.probe_endpoint": {"queue": "io"},
    "studies.tasks.import_upload": {"queue": "light"},
    "studies.tasks.heartbeat": {"queue": "light"},
    "studies.tasks.compute_correlations": {"queue": "light"},
    "studies.tasks.compute_planner": {"queue": "light"},
    "studies.tasks.compute_diagnostics": {"queue": "light"},
    "studies.tasks.compute_report_card": {"queue": "light"},
    "studies.tasks.write_snapshot": {"queue": "light"},
    # a tuning job goes where its judge is (light, gpu or io): sent with its queue
    "studies.tasks.tune_judge": {"queue": "light"},
    "annotation.tasks.compute_agreement": {"queue": "light"},
    "studies.tasks.sweep_stale_work": {"queue": "maintenance"},
}
CELERY_TASK_ALWAYS_EAGER = False
# One beat per deployment (embedded in the maintenance worker: `worker -Q maintenance -B`)
# sends the sweeper, which re-enqueues runs and imports whose task was lost
# (studies/services/recovery.py). A sweep left waiting longer than an interval (a minute
# at least) is dropped: the next one does its work.
_sweep_interval = env_int("SWEEP_INTERVAL_SECONDS", 60, minimum=1)
CELERY_BEAT_SCHEDULE = {
    "sweep-stale-work": {
        "task": "studies.tasks.sweep_stale_work",
        "schedule": schedule(timedelta(seconds=_sweep_interval)),
        "options": {"queue": "maintenance", "expires": max(_sweep_interval, 60)},
    }
}

# --- cache (correlation results; shared by web and workers) ---------------------------
_cache_url = env_str("CACHE_URL") or _redis_db(2)
CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _cache_url}
    if _cache_url
    else {
        "BACKEND": "django.core.cache.backends.filebased.FileBasedCache",
        "LOCATION": str(DATA_DIR / "cache"),
        "OPTIONS": {"MAX_ENTRIES": 5000},
    }
}
CACHES["default"]["TIMEOUT"] = 7 * 24 * 3600  # keys carry the data version; old ones just expire

# --- Concordia ------------------------------------------------------------------------
CONCORDIA = {
    "IMPORT_MAX_LINE_BYTES": env_int("IMPORT_MAX_LINE_BYTES", 1024 * 1024, minimum=1024),
    "IMPORT_MAX_FILE_BYTES": env_int("IMPORT_MAX_FILE_BYTES", 512 * 1024 * 1024, minimum=1024),
    "IMPORT_BATCH_SIZE": env_int("IMPORT_BATCH_SIZE", 2000, minimum=1),
    # A resumable upload (studies/services/uploads.py) that receives no chunk for this long
    # is given up: the sweeper removes it and what it received.
    "UPLOAD_SESSION_SECONDS": env_int("UPLOAD_SESSION_SECONDS", 24 * 3600, minimum=60),
    # aspects one import may create with "create unknown aspects" (a researcher's own)
    "IMPORT_MAX_NEW_ASPECTS": env_int("IMPORT_MAX_NEW_ASPECTS", 20, minimum=0),
    # metric names (each becomes an imported run) one file may hold: above the few dozen of
    # the largest public benchmarks (WMT's metrics tasks), far below a malformed file's
    # thousands of runs
    "IMPORT_MAX_METRICS": env_int("IMPORT_MAX_METRICS", 100, minimum=1),
    # A cold correlation matrix estimated (scoring.stats.cost) to take at most this many
    # seconds is computed in the request; a costlier one by a worker while the page polls.
    "DASHBOARD_INLINE_SECONDS": env_float("DASHBOARD_INLINE_SECONDS", 1.0, minimum=0.0),
    # Outputs scored between two database writes, in whole documents (a document's outputs
    # are batched together). 1: every document is written, and progress moves, as it ends.
    "RUN_CHUNK_OUTPUTS": env_int("RUN_CHUNK_OUTPUTS", 1, minimum=1),
    # whole documents per shard: the unit of work workers share (more shards, more workers)
    "RUN_SHARD_DOCUMENTS": env_int("RUN_SHARD_DOCUMENTS", 10, minimum=1),
    "MODEL_DIR": Path(env_str("CONCORDIA_MODEL_DIR") or DATA_DIR / "models"),
    # A RUNNING run whose worker wrote no heartbeat for this long is taken back by the
    # sweeper (its worker died: a live one beats from a thread in every step).
    "RUN_LEASE_SECONDS": env_int("RUN_LEASE_SECONDS", 300, minimum=1),
    # Every worker writes its own heartbeat this often (the jobs page: alive, not
    # answering, dead), and a run's worker its run's, whatever step it is in (at least
    # three times per RUN_LEASE_SECONDS)
    "WORKER_HEARTBEAT_SECONDS": env_float("WORKER_HEARTBEAT_SECONDS", 10.0, minimum=0.1),
    # A PENDING run or import whose task has not started after this long is enqueued again
    # (then after 2×, 4×, … as long as it keeps waiting: a long queue is not a lost task).
    "PENDING_GRACE_SECONDS": env_int("PENDING_GRACE_SECONDS", 600, minimum=1),
    # A RUNNING import (one transaction, so no heartbeat until it ends) older than this.
    # On PostgreSQL an import whose worker's database session is gone (a database restart)
    # is taken back at the next sweep instead.
    "IMPORT_LEASE_SECONDS": env_int("IMPORT_LEASE_SECONDS", 3600, minimum=1),
    # An import that lost its database connection this many times fails, saying why.
    "IMPORT_MAX_RECOVERIES": env_int("IMPORT_MAX_RECOVERIES", 5, minimum=0),
    # A served run keeps retrying an endpoint that stopped answering (a server being
    # restarted) this long before it goes back to PENDING; below RUN_LEASE_SECONDS.
    "SERVED_PATIENCE_SECONDS": env_float("SERVED_PATIENCE_SECONDS", 240.0, minimum=0.0),
    # A worker probes a served endpoint again before a run when its last probe is older.
    "SERVED_PROBE_MAX_AGE_SECONDS": env_float("SERVED_PROBE_MAX_AGE_SECONDS", 600.0, minimum=0.0),
    # A run whose endpoint has not answered for this long (its run back to PENDING each
    # time, the scores so far kept) ends FAILED with the last reason; Resume tries again.
    "SERVED_GIVE_UP_SECONDS": env_float("SERVED_GIVE_UP_SECONDS", 3600.0, minimum=0.0),
    # io worker processes one endpoint may hold at once (a shared one's; a researcher's
    # endpoints share theirs): the others stay free for everyone else's.
    "SERVED_ENDPOINT_SLOTS": env_int("SERVED_ENDPOINT_SLOTS", 2, minimum=1),
    # An answer's body past this many bytes is not read further (that request's error).
    "SERVED_MAX_RESPONSE_BYTES": env_int(
        "SERVED_MAX_RESPONSE_BYTES", 16 * 1024 * 1024, minimum=1024
    ),
    # A run ending with more than this share of its outputs unscored (errors) ends FAILED,
    # saying why; Resume scores the failed outputs again.
    "RUN_MAX_ERROR_SHARE": env_float("RUN_MAX_ERROR_SHARE", 0.5, minimum=0.0),
    # Columnar snapshots of each dataset's numbers (studies/services/analysis/snapshot/):
    # written once per data version, read by every matrix; off: every read goes to the
    # database's rows (the previous path). They live under the data folder unless moved.
    "SNAPSHOTS": env_bool("CONCORDIA_SNAPSHOTS", True),
    "SNAPSHOT_DIR": Path(env_str("CONCORDIA_SNAPSHOT_DIR") or DATA_DIR / "snapshots"),
    # How long a reader waits for another process writing the same snapshot before it
    # reads the rows itself; and how long a superseded snapshot stays for readers that
    # opened it before a newer one was written.
    "SNAPSHOT_WAIT_SECONDS": env_float("SNAPSHOT_WAIT_SECONDS", 600.0, minimum=0.0),
    "SNAPSHOT_RETAIN_SECONDS": env_float("SNAPSHOT_RETAIN_SECONDS", 600.0, minimum=0.0),
    # G-Eval's evaluation steps generated on request (each holds a model worker for
    # minutes): at most this many waiting or running per user, and this many per hour.
    "STEPS_MAX_PENDING": env_int("STEPS_MAX_PENDING", 2, minimum=1),
    "STEPS_MAX_PER_HOUR": env_int("STEPS_MAX_PER_HOUR", 6, minimum=1),
    # Tests only: seconds a worker waits before scoring each chunk (and before writing each
    # import batch), to kill it, or cut its database, mid-run.
    "TEST_SLOW_CHUNK_SECONDS": env_float("TEST_SLOW_CHUNK_SECONDS", 0.0, minimum=0.0),
}
# --- served endpoints (README: "Served endpoints: the policy") --------------------------
# Stored API keys are encrypted with this Fernet key (ENDPOINT_KEY, or the file
# ENDPOINT_KEY_FILE names), never one derived from SECRET_KEY; unset, one is generated
# once into DATA_DIR/endpoint.key. ENDPOINT_KEY_PREVIOUS: older Fernet keys still read
# (rotation; `manage.py endpoint rekey` re-encrypts every stored key with the current).
ENDPOINT_KEY = env_str("ENDPOINT_KEY") or ""
ENDPOINT_KEY_PREVIOUS = env_list("ENDPOINT_KEY_PREVIOUS", [])
# The environment variables a shared endpoint (an admin's) may read its key from; empty:
# none. The site's own secrets can never be named, even here.
ENDPOINT_KEY_ENV_ALLOWED = env_list("ENDPOINT_KEY_ENV_ALLOWED", [])
_OWN_SECRETS = {
    "SECRET_KEY",
    "DATABASE_URL",
    "CELERY_BROKER_URL",
    "CELERY_RESULT_BACKEND",
    "CACHE_URL",
    "ENDPOINT_KEY",
    "ENDPOINT_KEY_PREVIOUS",
    "POSTGRES_PASSWORD",
}
_named = [n for n in ENDPOINT_KEY_ENV_ALLOWED if n in _OWN_SECRETS or n.endswith("_FILE")]
if _named:
    raise ImproperlyConfigured(
        f"ENDPOINT_KEY_ENV_ALLOWED names {', '.join(_named)}: the site's own secrets (and "
        "files of secrets) are never an endpoint's key."
    )
# Researchers' endpoints reach public addresses only, but for these networks and host
# names (comma lists): e.g. ENDPOINT_ALLOWED_NETWORKS=10.20.0.0/16 for a GPU subnet.
# Shared endpoints (an admin's) are trusted and reach anything.
ENDPOINT_ALLOWED_NETWORKS = env_networks("ENDPOINT_ALLOWED_NETWORKS")
ENDPOINT_ALLOWED_HOSTS = [h.lower().rstrip(".") for h in env_list("ENDPOINT_ALLOWED_HOSTS", [])]

# --- REST API (studies/api) -----------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "studies.api.authentication.ThrottledTokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    # bodies are JSON (form encodings cannot say null, [] or a nested object); the
    # upload endpoints take multipart/form-data, the token endpoint forms too
    "DEFAULT_PARSER_CLASSES": ["rest_framework.parsers.JSONParser"],
    "DEFAULT_PAGINATION_CLASS": "studies.api.pagination.Pagination",
    "PAGE_SIZE": 50,
    "DEFAULT_FILTER_BACKENDS": [
        "studies.api.filters.FilterBackend",
        "studies.api.filters.OrderingFilter",
    ],
    "DEFAULT_SCHEMA_CLASS": "studies.api.schema.ApiAutoSchema",
    "EXCEPTION_HANDLER": "studies.api.errors.exception_handler",
    "DEFAULT_THROTTLE_RATES": {"auth": env_str("API_AUTH_RATE") or "20/min"},
    "TEST_REQUEST_DEFAULT_FORMAT": "json",
}
# invalid tokens per client address and clock minute before they get 429 (valid ones never do)
API_FAILED_AUTH_LIMIT = env_int("API_FAILED_AUTH_LIMIT", 20, minimum=1)
API_SYNC_IMPORT_MAX_BYTES = env_int("API_SYNC_IMPORT_MAX_BYTES", 5 * 1024 * 1024, minimum=0)
SPECTACULAR_SETTINGS = {
    "TITLE": "Concordia API",
    "DESCRIPTION": "Datasets, metric runs, judgments, annotation campaigns and correlations: "
    "everything the pages do, on the same services. Authenticate with "
    "`Authorization: Token <key>` (your token is on the API token page).",
    "VERSION": "1",
    "SERVE_INCLUDE_SCHEMA": False,
    "SCHEMA_PATH_PREFIX": "/api/",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "studies.api.schema.document_request_text",
    ],
    "SWAGGER_UI_DIST": "SIDECAR",  # served from static files: works offline, no CDN
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "ENUM_NAME_OVERRIDES": {
        "RunStatusEnum": "studies.models.MetricRun.Status",
        "ImportStatusEnum": "studies.models.ImportJob.Status",
        "CampaignStatusEnum": "annotation.models.Campaign.Status",
        "AssignmentStatusEnum": "annotation.models.Assignment.Status",
        "CampaignModeEnum": "annotation.models.Campaign.Mode",
        "TrainingModeEnum": "learned.models.TrainedMetric.Mode",
        "RunKindEnum": "studies.models.MetricRun.Kind",
        "TemplateKindEnum": "studies.models.PromptTemplate.Kind",
        "AspectKindEnum": "studies.models.Aspect.Kind",
        "CampaignSelectionEnum": "annotation.models.Campaign.Selection",
        # humans or adjudicated: a tuning's gold and a report card's reference
        "GoldEnum": "studies.services.tuning.labels.GOLDS",
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "plain"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL") or "INFO"},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}
