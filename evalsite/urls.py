"""Top-level URL configuration."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.templatetags.static import static
from django.urls import include, path


def favicon(request: HttpRequest) -> HttpResponsePermanentRedirect:
    """Browsers ask for /favicon.ico whatever the page says: the pages' icon (its URL
    found when asked: with the manifest storage, after collectstatic)."""
    return HttpResponsePermanentRedirect(static("img/favicon.svg"))


urlpatterns = [
    path("admin/", admin.site.urls),
    path("favicon.ico", favicon, name="favicon"),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("evalsite.api_urls")),
    path("", include("annotation.urls")),
    path("", include("learned.urls")),
    path("", include("studies.urls")),
]

handler404 = "studies.api.errors.not_found"
