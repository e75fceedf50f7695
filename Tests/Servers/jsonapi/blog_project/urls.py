from django.urls import include, path, re_path
from rest_framework import routers

from blog import views

router = routers.DefaultRouter(trailing_slash=False)
router.register(r"articles", views.ArticleViewSet)
router.register(r"people", views.PersonViewSet)
router.register(r"tags", views.TagViewSet)
router.register(r"comments", views.CommentViewSet)
router.register(r"notes", views.NoteViewSet)


def related(viewset, name):
    return re_path(
        rf"^api/{name}/(?P<pk>[^/.]+)/(?P<related_field>[-\w]+)$",
        viewset.as_view({"get": "retrieve_related"}),
        name=f"{name}-related",
    )


def relationships(view, name):
    return re_path(rf"^api/{name}/(?P<pk>[^/.]+)/relationships/(?P<related_field>[-\w]+)$", view.as_view(), name=f"{name}-relationships")


urlpatterns = [
    re_path(r"^api/writers/(?P<person_pk>[^/.]+)/writings$", views.WriterWritingsView.as_view(), name="writer-writings"),
    re_path(r"^api/writers/(?P<pk>[^/.]+)/links/(?P<related_field>[-\w]+)$", views.WriterRelationshipView.as_view(), name="writer-links"),
    relationships(views.ArticleRelationshipView, "articles"),
    relationships(views.PersonRelationshipView, "people"),
    relationships(views.CommentRelationshipView, "comments"),
    related(views.ArticleViewSet, "articles"),
    related(views.PersonViewSet, "people"),
    related(views.CommentViewSet, "comments"),
    path("api/", include(router.urls)),
]
