from django.urls import path

from annotation.views import annotate, campaigns

app_name = "annotation"
urlpatterns = [
    path("annotate/", annotate.home, name="home"),
    path("annotate/<int:pk>/guidelines/", annotate.guidelines, name="guidelines"),
    path("annotate/<int:pk>/next/", annotate.next_item, name="next"),
    path("annotate/<int:pk>/items/<int:item>/", annotate.item, name="item"),
    path("annotate/<int:pk>/items/<int:item>/submit/", annotate.submit, name="submit"),
    path("annotate/<int:pk>/items/<int:item>/skip/", annotate.skip, name="skip"),
    path("campaigns/", campaigns.campaign_list, name="campaign-list"),
    path("campaigns/new/", campaigns.campaign_new, name="campaign-new"),
    path("campaigns/<int:pk>/", campaigns.campaign_detail, name="campaign-detail"),
    path("campaigns/<int:pk>/gold/", campaigns.campaign_gold, name="campaign-gold"),
    path("campaigns/<int:pk>/status/", campaigns.campaign_status, name="campaign-status"),
    path(
        "campaigns/<int:pk>/preferences.jsonl",
        campaigns.campaign_preferences,
        name="campaign-preferences",
    ),
]
