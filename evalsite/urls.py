"""Top-level URL configuration."""

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.templatetags.static import static
from django.urls import include, path
from django.views.generic import RedirectView

urlpatterns = [
    path("admin/", admin.site.urls),
    # browsers ask for /favicon.ico whatever the page says: the same icon as the pages'
    path(
        "favicon.ico",
        RedirectView.as_view(url=static("img/favicon.svg"), permanent=True),
        name="favicon",
    ),
    path("login/", auth_views.LoginView.as_view(), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("api/", include("evalsite.api_urls")),
    path("", include("annotation.urls")),
    path("", include("learned.urls")),
    path("", include("studies.urls")),
]

handler404 = "studies.api.errors.not_found"
