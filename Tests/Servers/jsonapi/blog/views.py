from rest_framework import generics
from rest_framework_json_api.views import ModelViewSet, RelationshipView

from blog.models import Article, Comment, Note, Person, Tag
from blog.serializers import ArticleSerializer, CommentSerializer, NoteSerializer, PersonSerializer, TagSerializer


class ArticleViewSet(ModelViewSet):
    queryset = Article.objects.all().order_by("id")
    serializer_class = ArticleSerializer
    ordering_fields = ["id", "title"]


class PersonViewSet(ModelViewSet):
    queryset = Person.objects.all().order_by("id")
    serializer_class = PersonSerializer


class TagViewSet(ModelViewSet):
    queryset = Tag.objects.all().order_by("id")
    serializer_class = TagSerializer


class CommentViewSet(ModelViewSet):
    queryset = Comment.objects.all().order_by("id")
    serializer_class = CommentSerializer


class ArticleRelationshipView(RelationshipView):
    queryset = Article.objects
    self_link_view_name = "articles-relationships"


class PersonRelationshipView(RelationshipView):
    queryset = Person.objects
    self_link_view_name = "people-relationships"


class CommentRelationshipView(RelationshipView):
    queryset = Comment.objects
    self_link_view_name = "comments-relationships"


class NoteViewSet(ModelViewSet):
    queryset = Note.objects.all().order_by("id")
    serializer_class = NoteSerializer


class WriterWritingsView(generics.ListAPIView):
    """A person's articles at a URL of its own (the related link of `articles`)."""

    serializer_class = ArticleSerializer

    def get_queryset(self):
        return Article.objects.filter(author_id=self.kwargs["person_pk"]).order_by("id")


class WriterRelationshipView(RelationshipView):
    """A person's relationships at a URL of its own (the self link of `articles`)."""

    queryset = Person.objects
    self_link_view_name = "writer-links"
