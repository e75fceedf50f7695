from rest_framework_json_api.views import ModelViewSet, RelationshipView

from blog.models import Article, Comment, Person, Tag
from blog.serializers import ArticleSerializer, CommentSerializer, PersonSerializer, TagSerializer


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
